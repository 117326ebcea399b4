import Foundation
import GRDB
import PartitionStore
import Shared

/// `campaign_conversions`: a profile's conversions per campaign, experiment version and conversion (docs/measurement.md,
/// "Conversions"): the first qualifying event's time (the conversion, counted once), how many qualifying events came
/// within the window, and the revenue in USD they carried.
struct CampaignConversionsTable {
    let db: Database

    init(_ db: Database) { self.db = db }

    /// Adds a qualifying event; true when it is the profile's first for that conversion (it converts now).
    func add(
        _ key: String, campaign: String, version: String, conversion: Int, variant: String, at time: Date, revenueUSD: Double
    ) throws -> Bool {
        try db.executeCached(
            sql: """
                INSERT INTO campaign_conversions (profile_key, campaign_key, version, conversion, variant, first_at, events, revenue_usd)
                VALUES (?, ?, ?, ?, ?, ?, 1, ?)
                ON CONFLICT DO UPDATE SET events = events + 1, revenue_usd = revenue_usd + excluded.revenue_usd
                """, arguments: [key, campaign, version, conversion, variant, WireTime.format(time), revenueUSD])
        return try Int.fetchOne(
            db.cachedStatement(
                sql: "SELECT events FROM campaign_conversions WHERE profile_key = ? AND campaign_key = ? AND version = ? AND conversion = ?"),
            arguments: [key, campaign, version, conversion]) == 1
    }

    /// Deletes up to `limit` conversions of one version first made before `cutoff`; returns how many.
    /// The campaign's conversions per arm and conversion index: profiles converted, their qualifying events and their
    /// revenue in US dollars.
    func figures(campaign: String) throws
        -> [(version: String, variant: String, conversion: Int, converted: Int, events: Int, revenueUSD: Double)]
    {
        try Row.fetchAll(
            db,
            sql: """
                SELECT version, variant, conversion, count(*) AS n, sum(events) AS events, sum(revenue_usd) AS revenue
                FROM campaign_conversions WHERE campaign_key = ? GROUP BY version, variant, conversion
                """, arguments: [campaign]
        ).map { ($0["version"], $0["variant"], $0["conversion"], $0["n"], $0["events"], $0["revenue"]) }
    }

    func prune(campaign: String, version: String, before cutoff: Date, limit: Int) throws -> Int {
        try db.execute(
            sql: """
                DELETE FROM campaign_conversions WHERE (profile_key, campaign_key, version, conversion) IN (
                    SELECT profile_key, campaign_key, version, conversion FROM campaign_conversions
                    WHERE campaign_key = ? AND version = ? AND first_at < ? LIMIT ?)
                """, arguments: [campaign, version, WireTime.format(cutoff), limit])
        return db.changesCount
    }
}
