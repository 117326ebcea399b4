import Foundation
import GRDB
import PartitionStore
import Shared

/// A profile's purchases (the `purchase` op, braze-rules §3.2): per product, how many were bought and the revenue in
/// US dollars; and, so that segments and campaigns see them like any event, the `PURCHASE` event's aggregate, counted
/// `quantity` times (10 USD × 3 is three purchases of 10 USD, rule 11).
struct Purchases {
    let db: Database

    init(_ db: Database) { self.db = db }

    /// The event a purchase also is, for segments (`e.PURCHASE.count`) and campaign triggers (`trigger: {event:
    /// PURCHASE, where: event.revenue_usd >= 50}`).
    static let eventName = "PURCHASE"

    /// Applies a `purchase` field; returns the event it counts as (with its typed attributes: `product_id`,
    /// `currency`, `price`, `quantity`, `revenue_usd` and the properties), for triggers.
    func apply(_ key: String, purchase: JSONValue, receivedAt: Date) throws -> JSONValue {
        guard let product = purchase["product_id"]?.stringValue, let currency = purchase["currency"]?.stringValue,
            case .number(let priceText)? = purchase["price"], let price = Double(priceText),
            case .number(let quantityText)? = purchase["quantity"], let quantity = Int64(quantityText)
        else { return .object([]) }
        var revenue: Double?
        if case .number(let text)? = purchase["revenue_usd"] { revenue = Double(text) }
        var at = receivedAt
        if let text = purchase["time"]?.stringValue, let time = WireTime.parse(text) { at = time }
        let time = WireTime.format(at)
        try PurchaseAggregatesTable(db).add(
            key,
            PurchaseAggregate(
                product: product, count: quantity, revenueUSD: revenue ?? 0, unpricedCount: revenue == nil ? quantity : 0,
                first: time, last: time, lastPrice: price, lastCurrency: currency))
        var attributes: [JSONMember] = [
            JSONMember("product_id.s", .string(product)), JSONMember("currency.s", .string(currency)),
            JSONMember("price.f", .number(JSONValue.literal(price))), JSONMember("quantity.i", .number(String(quantity))),
        ]
        if let revenue { attributes.append(JSONMember("revenue_usd.f", .number(JSONValue.literal(revenue)))) }
        if case .object(let properties)? = purchase["properties"] {
            let taken = Set(attributes.map { $0.key.prefix { $0 != "." } })
            attributes += properties.filter { !taken.contains($0.key.prefix { $0 != "." }) }
        }
        let event = JSONValue.object([
            JSONMember("name", .string(Self.eventName)), JSONMember("time", .string(time)),
            JSONMember("attributes", .object(attributes)),
        ])
        try EventAggregatesTable(db).add(
            key,
            EventAggregate(
                name: Self.eventName, count: quantity, first: time, last: time, label: nil, tags: nil,
                attributes: String(decoding: (event["attributes"] ?? .object([])).serialized, as: UTF8.self)))
        return event
    }

    /// `{"<product>": {"count", "revenue_usd", "unpriced_count", "first", "last", "last_price", "last_currency"}}`: for
    /// the profile's JSON and for a merge.
    func history(_ key: String) throws -> JSONValue {
        .object(try PurchaseAggregatesTable(db).all(key).map { aggregate in
            JSONMember(
                aggregate.product,
                .object([
                    JSONMember("count", .number(String(aggregate.count))),
                    JSONMember("revenue_usd", .number(JSONValue.literal(aggregate.revenueUSD))),
                    JSONMember("unpriced_count", .number(String(aggregate.unpricedCount))),
                    JSONMember("first", .string(aggregate.first)), JSONMember("last", .string(aggregate.last)),
                    JSONMember("last_price", .number(JSONValue.literal(aggregate.lastPrice))),
                    JSONMember("last_currency", .string(aggregate.lastCurrency)),
                ]))
        })
    }

    /// Adds a merged profile's purchases to this one's.
    func merge(_ key: String, history: JSONValue) throws {
        guard case .object(let products) = history else { return }
        let table = PurchaseAggregatesTable(db)
        for product in products {
            let value = product.value
            guard case .number(let count)? = value["count"], let count = Int64(count),
                case .number(let revenue)? = value["revenue_usd"], let revenue = Double(revenue),
                case .number(let unpriced)? = value["unpriced_count"], let unpriced = Int64(unpriced),
                let first = value["first"]?.stringValue, let last = value["last"]?.stringValue,
                case .number(let price)? = value["last_price"], let price = Double(price),
                let currency = value["last_currency"]?.stringValue
            else { continue }
            try table.add(
                key,
                PurchaseAggregate(
                    product: product.key, count: count, revenueUSD: revenue, unpricedCount: unpriced, first: first, last: last,
                    lastPrice: price, lastCurrency: currency))
        }
    }
}
