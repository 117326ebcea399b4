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

    /// Applies a purchase; returns the typed attributes of the event it counts as (`product_id`, `currency`, `price`,
    /// `quantity`, `revenue_usd` and the properties), for triggers.
    func apply(_ key: String, _ purchase: Purchase, receivedAt: Date) throws -> JSONValue {
        let time = purchase.time ?? receivedAt
        let quantity = Int64(purchase.quantity)
        try PurchaseAggregatesTable(db).add(
            key,
            PurchaseAggregate(
                product: purchase.productID, count: quantity, revenueUSD: purchase.revenueUSD ?? 0,
                unpricedCount: purchase.revenueUSD == nil ? quantity : 0, first: time, last: time, lastPrice: purchase.price,
                lastCurrency: purchase.currency))
        var attributes: [(String, AttributeValue)] = [
            ("product_id", .string(purchase.productID)), ("currency", .string(purchase.currency)), ("price", .double(purchase.price)),
            ("quantity", .integer(quantity)),
        ]
        if let revenue = purchase.revenueUSD { attributes.append(("revenue_usd", .double(revenue))) }
        let taken = Set(attributes.map(\.0))
        attributes += purchase.properties.filter { !taken.contains($0.0) }
        let typed = AttributeValue.typedObject(attributes)
        try EventAggregatesTable(db).add(
            key,
            EventAggregate(
                name: Self.eventName, count: quantity, first: time, last: time, label: nil, tags: nil,
                attributes: String(decoding: typed.serialized, as: UTF8.self)))
        return typed
    }

    /// The profile's purchases, per product (for its JSON and a merge).
    func history(_ key: String) throws -> [MergedHistory.Product] {
        try PurchaseAggregatesTable(db).all(key).map { aggregate in
            MergedHistory.Product(
                productID: aggregate.product, count: aggregate.count, revenueUSD: aggregate.revenueUSD,
                unpricedCount: aggregate.unpricedCount, first: aggregate.first, last: aggregate.last,
                lastPrice: aggregate.lastPrice, lastCurrency: aggregate.lastCurrency)
        }
    }

    /// `{"<product>": {"count", "revenue_usd", "unpriced_count", "first", "last", "last_price", "last_currency"}}`.
    func json(_ key: String) throws -> JSONValue {
        .object(try history(key).map { JSONMember($0.productID, $0.json) })
    }

    /// Adds a merged profile's purchases to this one's.
    func merge(_ key: String, _ products: [MergedHistory.Product]) throws {
        let table = PurchaseAggregatesTable(db)
        for product in products {
            try table.add(
                key,
                PurchaseAggregate(
                    product: product.productID, count: product.count, revenueUSD: product.revenueUSD,
                    unpricedCount: product.unpricedCount, first: product.first, last: product.last, lastPrice: product.lastPrice,
                    lastCurrency: product.lastCurrency))
        }
    }
}
