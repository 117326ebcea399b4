import Foundation
import Shared

/// Braze's purchase rules (braze-rules §3.2, rules 8–12), shared by `/users/track` and Segment's `Order Completed`.
extension LenientValues {
    /// The most units one purchase may count (the SDK header's "greater than 0, no larger than 100", §12 #1).
    static let quantities = 1...100
    /// The largest unit price, in the purchase's currency.
    static let maxPrice = 1_000_000_000.0

    /// A purchase, or nil (reported) when it cannot be logged: no product id or one over 255 characters (rule 8), a
    /// currency that is not ISO 4217 (rule 9), no price, a quantity outside 1–100 (rule 10; absent is 1). Its revenue
    /// in US dollars comes from the project's rate for the currency (rule 12); without one the purchase is kept
    /// without revenue and the missing rate reported.
    mutating func purchase(
        productID: JSONValue?, currency: JSONValue?, price: JSONValue?, quantity: JSONValue?, time: Date?,
        properties: [(String, AttributeValue)], rates: [String: Double], path: String, productField: String = "product_id"
    ) -> Purchase? {
        guard case .string(let product)? = productID, !product.isEmpty else {
            drop("\(path).\(productField)", "missing_product_id", "a purchase needs a non-empty product id: it is not logged")
            return nil
        }
        guard product.unicodeScalars.count <= Self.maxString else {
            drop("\(path).\(productField)", "product_id_too_long", "product ids are at most \(Self.maxString) characters")
            return nil
        }
        guard case .string(let currencyText)? = currency, iso4217.contains(currencyText.asciiUppercased) else {
            drop("\(path).currency", "invalid_currency", "currency is an ISO 4217 code such as USD or EUR: the purchase is not logged")
            return nil
        }
        let code = currencyText.asciiUppercased
        guard case .number(let literal)? = price, let amount = Double(literal), amount.isFinite else {
            drop("\(path).price", "invalid_price", "price is a number")
            return nil
        }
        // A unit price past any real product's is a made-up revenue, which would buy an experiment's result.
        guard abs(amount) <= Self.maxPrice else {
            drop("\(path).price", "invalid_price", "price is at most \(Int(Self.maxPrice)) in its currency (and at least its negative)")
            return nil
        }
        var units = 1
        if let quantity, quantity != .null {
            guard case .number(let text) = quantity, let count = Int(text), Self.quantities.contains(count) else {
                drop("\(path).quantity", "invalid_quantity", "quantity is a whole number from 1 to 100")
                return nil
            }
            units = count
        }
        let rate: Double? = code == "USD" ? 1 : rates[code]
        if rate == nil {
            adjust("\(path).currency", "no_usd_rate", "the project has no USD rate for \(code): the purchase has no revenue in USD")
        }
        return Purchase(
            productID: product, currency: code, price: amount, quantity: units,
            revenueUSD: rate.map { Purchase.revenueUSD(price: amount, quantity: units, rate: $0) }, time: time,
            properties: properties)
    }

    /// The products of an e-commerce `Order Completed` event (Segment's spec, which Braze's integrations follow): its
    /// name read as Herald's (`order_completed`, `Order Completed`), with a non-empty `products` array; nil for any
    /// other event, which stays an event.
    static func orderProducts(event name: String, properties: JSONValue?) -> [JSONValue]? {
        guard NameMapping.map(name, as: .event).name == "ORDER_COMPLETED", case .array(let products)? = properties?["products"],
            !products.isEmpty
        else { return nil }
        return products
    }

    /// One purchase per product of an order: `product_id`, else `sku`, else `id`; `price`; `quantity`; in the order's
    /// `currency` (USD by default). The order's other properties (its `order_id`, …; not its totals, which the
    /// purchases add up to) and the product's own go with each. Each valid purchase comes with its product's place.
    mutating func orderPurchases(
        _ order: JSONValue, products: [JSONValue], time: Date?, rates: [String: Double], path: String
    ) -> [(index: Int, purchase: Purchase)] {
        let currency = order["currency"] ?? .string("USD")
        var shared: [JSONMember] = []
        if case .object(let members) = order {
            shared = members.filter { !["products", "currency", "revenue", "total", "subtotal"].contains($0.key) }
        }
        var purchases: [(index: Int, purchase: Purchase)] = []
        for (index, product) in products.enumerated() {
            let productPath = "\(path).products[\(index)]"
            guard case .object(let fields) = product else {
                drop(productPath, "invalid_type", "a product is an object")
                continue
            }
            let own = fields.filter { !["product_id", "price", "quantity"].contains($0.key) }
            let properties = self.properties(.object(shared + own), path: productPath)
            guard let purchase = purchase(
                productID: product["product_id"] ?? product["sku"] ?? product["id"], currency: currency, price: product["price"],
                quantity: product["quantity"], time: time, properties: properties, rates: rates, path: productPath)
            else { continue }
            purchases.append((index, purchase))
        }
        return purchases
    }
}
