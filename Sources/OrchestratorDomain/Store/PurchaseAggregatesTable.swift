import Foundation
import GRDB
import PartitionStore
import Shared

/// A product's purchases by a profile: units, revenue in US dollars, units without a rate, first and last time, the
/// last price and currency.
struct PurchaseAggregate {
    var product: String
    var count: Int64
    var revenueUSD: Double
    /// Units bought in a currency the project had no rate for (their revenue is not in `revenueUSD`).
    var unpricedCount: Int64
    var first: Date
    var last: Date
    var lastPrice: Double
    var lastCurrency: String
}

/// `purchase_aggregates`: per profile and product, what `PurchaseAggregate` holds (docs/orchestrator.md).
struct PurchaseAggregatesTable {
    let db: Database

    init(_ db: Database) { self.db = db }

    /// Adds an aggregate (one purchase, or a merged profile's) to the profile's; "last" values follow the time.
    func add(_ key: String, _ aggregate: PurchaseAggregate) throws {
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
                key, aggregate.product, aggregate.count, aggregate.revenueUSD, aggregate.unpricedCount, WireTime.format(aggregate.first),
                WireTime.format(aggregate.last), aggregate.lastPrice, aggregate.lastCurrency,
            ])
    }

    /// How many products the profile bought.
    func count(_ key: String) throws -> Int {
        try Int.fetchOne(db.cachedStatement(sql: "SELECT count(*) FROM purchase_aggregates WHERE profile_key = ?"), arguments: [key]) ?? 0
    }

    func has(_ key: String, product: String) throws -> Bool {
        try Bool.fetchOne(
            db.cachedStatement(sql: "SELECT EXISTS (SELECT 1 FROM purchase_aggregates WHERE profile_key = ? AND product_id = ?)"),
            arguments: [key, product]) ?? false
    }

    /// Every product's aggregate of a profile, in product order.
    func all(_ key: String) throws -> [PurchaseAggregate] {
        try Row.fetchAll(
            db.cachedStatement(sql: "SELECT * FROM purchase_aggregates WHERE profile_key = ? ORDER BY product_id"),
            arguments: [key]
        ).map { row in
            PurchaseAggregate(
                product: row["product_id"], count: row["count"], revenueUSD: row["revenue_usd"],
                unpricedCount: row["unpriced_count"], first: try row.requiredTime("first_at"), last: try row.requiredTime("last_at"),
                lastPrice: row["last_price"], lastCurrency: row["last_currency"])
        }
    }
}
