import Foundation
import GRDB
import PartitionStore
import Shared

/// `campaign_history`: the campaign decisions made for a profile, one per occurrence (a replayed trigger finds its
/// decision; re-eligibility counts them).
struct CampaignHistoryTable {
    let db: Database

    init(_ db: Database) { self.db = db }

    /// Records a decision; false when this occurrence was decided before.
    func record(campaign: String, key: String, occurrence: String, at time: Date) throws -> Bool {
        try db.executeCached(
            sql: "INSERT OR IGNORE INTO campaign_history (campaign_key, profile_key, occurrence, at) VALUES (?, ?, ?, ?)",
            arguments: [campaign, key, occurrence, WireTime.format(time)])
        return db.changesCount == 1
    }

    /// Whether the campaign was ever decided for the profile.
    func any(campaign: String, key: String) throws -> Bool {
        try Bool.fetchOne(
            db.cachedStatement(sql: "SELECT 1 FROM campaign_history WHERE campaign_key = ? AND profile_key = ? LIMIT 1"),
            arguments: [campaign, key]) != nil
    }

    /// How many times the campaign was decided for the profile after `since`.
    func count(campaign: String, key: String, since time: Date) throws -> Int {
        try Int.fetchOne(
            db.cachedStatement(sql: "SELECT count(*) FROM campaign_history WHERE campaign_key = ? AND profile_key = ? AND at > ?"),
            arguments: [campaign, key, WireTime.format(time)]) ?? 0
    }

    /// A deleted profile's decisions.
    /// Takes back one decision (every message of it aborted by its template).
    func forget(campaign: String, key: String, occurrence: String) throws {
        try db.executeCached(
            sql: "DELETE FROM campaign_history WHERE campaign_key = ? AND profile_key = ? AND occurrence = ?",
            arguments: [campaign, key, occurrence])
    }

    func deleteAll(key: String) throws {
        try db.executeCached(sql: "DELETE FROM campaign_history WHERE profile_key = ?", arguments: [key])
    }

    /// The first campaign the table holds after `after` (one index seek).
    func campaign(after: String) throws -> String? {
        try String.fetchOne(
            db, sql: "SELECT campaign_key FROM campaign_history WHERE campaign_key > ? ORDER BY campaign_key LIMIT 1",
            arguments: [after])
    }

    /// Deletes up to `limit` decisions of `campaign` made before `cutoff`; returns how many.
    func prune(campaign: String, before cutoff: Date, limit: Int) throws -> Int {
        try db.execute(
            sql: """
                DELETE FROM campaign_history WHERE (campaign_key, profile_key, occurrence) IN (
                    SELECT campaign_key, profile_key, occurrence FROM campaign_history
                    WHERE campaign_key = ? AND at < ? LIMIT ?)
                """, arguments: [campaign, WireTime.format(cutoff), limit])
        return db.changesCount
    }
}
