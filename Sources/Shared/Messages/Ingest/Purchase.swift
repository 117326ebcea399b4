import Foundation

/// The `purchase` field of a `purchase` record on `herald.ingest` (docs/ingest.md): what was bought, at what price, how
/// many, and the revenue in US dollars at the project's rate when it was reported (braze-rules §3.2, rules 8–12).
///
/// `{"product_id": "sku-1", "currency": "EUR", "price": 9.99, "quantity": 3, "revenue_usd": 32.37,
///   "time": "2026-11-24T10:00:00.000Z", "properties": {"color.s": "red"}}`
package struct Purchase: Sendable, Equatable {
    /// 1 to 255 characters.
    package var productID: String
    /// ISO 4217, uppercase.
    package var currency: String
    /// Per unit, in `currency`.
    package var price: Double
    /// 1 to 100: the purchase counts as this many (10 USD × 3 is three purchases, 30 USD).
    package var quantity: Int
    /// `price × quantity` in US dollars, rounded to the cent; nil when the project has no rate for the currency.
    package var revenueUSD: Double?
    /// When it happened, if the client said.
    package var time: Date?
    package var properties: [(String, AttributeValue)]

    package init(
        productID: String, currency: String, price: Double, quantity: Int, revenueUSD: Double?, time: Date?,
        properties: [(String, AttributeValue)]
    ) {
        self.productID = productID
        self.currency = currency
        self.price = price
        self.quantity = quantity
        self.revenueUSD = revenueUSD
        self.time = time
        self.properties = properties
    }

    package var json: JSONValue {
        var members = [
            JSONMember("product_id", .string(productID)), JSONMember("currency", .string(currency)),
            JSONMember("price", .number(JSONValue.literal(price))), JSONMember("quantity", .number(String(quantity))),
        ]
        if let revenueUSD { members.append(JSONMember("revenue_usd", .number(JSONValue.literal(revenueUSD)))) }
        if let time { members.append(JSONMember("time", .string(WireTime.format(time)))) }
        members.append(JSONMember("properties", AttributeValue.typedObject(properties)))
        return .object(members)
    }

    /// The revenue of `quantity` units at `price` in US dollars, rounded to the cent.
    package static func revenueUSD(price: Double, quantity: Int, rate: Double) -> Double {
        (price * Double(quantity) * rate * 100).rounded() / 100
    }

    package static func == (lhs: Purchase, rhs: Purchase) -> Bool { lhs.json == rhs.json }

    /// Reads a purchase `json` wrote.
    package init(wire value: JSONValue, path: String) throws(WireError) {
        let object = try WireObject(value, path: path)
        let quantity = try object.int64("quantity")
        guard let units = Int(exactly: quantity) else { throw WireError(reason: "\(object.path("quantity")): out of range") }
        self.init(
            productID: try object.string("product_id"), currency: try object.string("currency"), price: try object.double("price"),
            quantity: units, revenueUSD: try object.optionalDouble("revenue_usd"), time: try object.optionalDate("time"),
            properties: try object.value("properties").map { value throws(WireError) in
                try AttributeValue.typedMembers(value, path: object.path("properties"))
            } ?? [])
    }
}
