import Foundation
import GRDB
import PartitionStore
import Shared

/// A profile's purchases (the `purchase` op, braze-rules §3.2): per product, how many were bought and the revenue in
/// US dollars; and, so that segments and campaigns see them like any event, the `PURCHASE` event's aggregate, counted
/// `quantity` times (10 USD × 3 is three purchases of 10 USD, rule 11).
enum Purchases {
    /// The event a purchase also is, for segments (`e.PURCHASE.count`) and campaign triggers (`trigger: {event:
    /// PURCHASE, where: event.revenue_usd >= 50}`).
    static let eventName = "PURCHASE"

    /// Applies a `purchase` field; returns the event it counts as (with its typed attributes: `product_id`,
    /// `currency`, `price`, `quantity`, `revenue_usd` and the properties), for triggers.
    static func apply(_ db: Database, key: String, purchase: JSONValue, receivedAt: Date) throws -> JSONValue {
        guard let product = purchase["product_id"]?.stringValue, let currency = purchase["currency"]?.stringValue,
            case .number(let priceText)? = purchase["price"], let price = Double(priceText),
            case .number(let quantityText)? = purchase["quantity"], let quantity = Int64(quantityText)
        else { return .object([]) }
        var revenue: Double?
        if case .number(let text)? = purchase["revenue_usd"] { revenue = Double(text) }
        var at = receivedAt
        if let text = purchase["time"]?.stringValue, let time = WireTime.parse(text) { at = time }
        let time = WireTime.format(at)
        try add(
            db, key: key,
            Aggregate(
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
            JSONMember("name", .string(eventName)), JSONMember("time", .string(time)), JSONMember("attributes", .object(attributes)),
        ])
        try ProfileEdits.addAggregate(
            db, key: key,
            ProfileEdits.EventAggregate(
                name: eventName, count: quantity, first: time, last: time, label: nil, tags: nil,
                attributes: String(decoding: (event["attributes"] ?? .object([])).serialized, as: UTF8.self)))
        return event
    }

    struct Aggregate {
        var product: String
        var count: Int64
        var revenueUSD: Double
        /// Units bought in a currency the project had no rate for (their revenue is not in `revenueUSD`).
        var unpricedCount: Int64
        var first: String
        var last: String
        var lastPrice: Double
        var lastCurrency: String
    }

    static func add(_ db: Database, key: String, _ aggregate: Aggregate) throws {
        try db.executeCached(sql: """
                INSERT INTO purchase_aggregates (profile_key, product_id, count, revenue_usd, unpriced_count, first_at, last_at,
                    last_price, last_currency)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
                ON CONFLICT (profile_key, product_id) DO UPDATE SET
                    count = count + excluded.count,
                    revenue_usd = revenue_usd + excluded.revenue_usd,
                    unpriced_count = unpriced_count + excluded.unpriced_count,
                    first_at = min(first_at, excluded.first_at),
                    last_price = CASE WHEN excluded.last_at >= last_at THEN excluded.last_price ELSE last_price END,
                    last_currency = CASE WHEN excluded.last_at >= last_at THEN excluded.last_currency ELSE last_currency END,
                    last_at = max(last_at, excluded.last_at)
                """,
            arguments: [
                key, aggregate.product, aggregate.count, aggregate.revenueUSD, aggregate.unpricedCount, aggregate.first,
                aggregate.last, aggregate.lastPrice, aggregate.lastCurrency,
            ])
    }

    /// Every product's aggregate, for the profile's JSON and for a merge.
    static func rows(_ db: Database, key: String) throws -> [Row] {
        try Row.fetchAll(
            db, sql: "SELECT * FROM purchase_aggregates WHERE profile_key = ? ORDER BY product_id", arguments: [key])
    }

    /// `{"<product>": {"count", "revenue_usd", "unpriced_count", "first", "last", "last_price", "last_currency"}}`.
    static func history(_ db: Database, key: String) throws -> JSONValue {
        .object(try rows(db, key: key).map { row in
            JSONMember(
                row["product_id"],
                .object([
                    JSONMember("count", .number(String(row["count"] as Int64))),
                    JSONMember("revenue_usd", .number(JSONValue.literal(row["revenue_usd"] as Double))),
                    JSONMember("unpriced_count", .number(String(row["unpriced_count"] as Int64))),
                    JSONMember("first", .string(row["first_at"])), JSONMember("last", .string(row["last_at"])),
                    JSONMember("last_price", .number(JSONValue.literal(row["last_price"] as Double))),
                    JSONMember("last_currency", .string(row["last_currency"])),
                ]))
        })
    }

    /// Adds a merged profile's purchases to this one's.
    static func merge(_ db: Database, key: String, history: JSONValue) throws {
        guard case .object(let products) = history else { return }
        for product in products {
            let value = product.value
            guard case .number(let count)? = value["count"], let count = Int64(count),
                case .number(let revenue)? = value["revenue_usd"], let revenue = Double(revenue),
                case .number(let unpriced)? = value["unpriced_count"], let unpriced = Int64(unpriced),
                let first = value["first"]?.stringValue, let last = value["last"]?.stringValue,
                case .number(let price)? = value["last_price"], let price = Double(price),
                let currency = value["last_currency"]?.stringValue
            else { continue }
            try add(
                db, key: key,
                Aggregate(
                    product: product.key, count: count, revenueUSD: revenue, unpricedCount: unpriced, first: first, last: last,
                    lastPrice: price, lastCurrency: currency))
        }
    }
}
