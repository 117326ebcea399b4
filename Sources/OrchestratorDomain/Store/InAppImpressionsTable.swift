import Foundation
import GRDB
import PartitionStore
import Shared

/// `in_app_impressions`: each in-app message shown to a profile, on whichever of its devices (so that re-eligibility
/// counts per profile, not per device: a capped message is not shown again on the user's second phone).
struct InAppImpressionsTable {
    let db: Database

    init(_ db: Database) { self.db = db }

    /// Keeps an impression unless the installation has one of the message within `spacing` of it (a report a real app,
    /// which shows a message at most once per its minimum trigger interval, could not make), then the newest `kept` of
    /// the profile's impressions of the message; false when it was not kept (a repeat).
    func shown(_ key: String, message: String, installationID: String, at time: Date, spacing: TimeInterval, kept: Int) throws -> Bool {
        let near = try Bool.fetchOne(
            db.cachedStatement(
                sql: """
                    SELECT EXISTS (SELECT 1 FROM in_app_impressions WHERE profile_key = ? AND message_key = ? AND at > ? AND at < ?
                        AND installation_id = ?)
                    """),
            arguments: [
                key, message, WireTime.format(time.addingTimeInterval(-spacing)), WireTime.format(time.addingTimeInterval(spacing)),
                installationID,
            ]) ?? false
        guard !near else { return false }
        try db.executeCached(
            sql: "INSERT OR IGNORE INTO in_app_impressions (profile_key, message_key, at, installation_id) VALUES (?, ?, ?, ?)",
            arguments: [key, message, WireTime.format(time), installationID])
        guard db.changesCount > 0 else { return false }
        try db.executeCached(
            sql: """
                DELETE FROM in_app_impressions WHERE (profile_key, message_key, at, installation_id) IN (
                    SELECT profile_key, message_key, at, installation_id FROM in_app_impressions WHERE profile_key = ? AND message_key = ?
                    ORDER BY at DESC LIMIT -1 OFFSET ?)
                """, arguments: [key, message, kept])
        return true
    }

    enum Mark: String { case clicked, dismissed }

    /// Marks the installation's newest impression of the message that has no such mark yet; false when there is none (a
    /// click or a dismissal that no impression came before counts nowhere).
    func mark(_ key: String, message: String, installationID: String, _ mark: Mark) throws -> Bool {
        try db.execute(
            sql: """
                UPDATE in_app_impressions SET \(mark.rawValue) = 1 WHERE (profile_key, message_key, at, installation_id) IN (
                    SELECT profile_key, message_key, at, installation_id FROM in_app_impressions
                    WHERE profile_key = ? AND message_key = ? AND installation_id = ? AND \(mark.rawValue) = 0 ORDER BY at DESC LIMIT 1)
                """, arguments: [key, message, installationID])
        return db.changesCount > 0
    }

    /// How many times the message was shown to the profile at or after `since` (nil: ever).
    func count(_ key: String, message: String, since time: Date? = nil) throws -> Int {
        try Int.fetchOne(
            db.cachedStatement(
                sql: "SELECT count(*) FROM in_app_impressions WHERE profile_key = ? AND message_key = ? AND at >= ?"),
            arguments: [key, message, time.map(WireTime.format) ?? ""]) ?? 0
    }

    /// Every impression of the profile still kept: its message and time (a sync reads them once for all messages).
    func all(_ key: String) throws -> [(message: String, at: Date)] {
        try Row.fetchAll(
            db.cachedStatement(sql: "SELECT message_key, at FROM in_app_impressions WHERE profile_key = ?"), arguments: [key]
        ).map { ($0["message_key"], try $0.requiredTime("at")) }
    }

    /// The impressions of the profile at or after `since`, per message, with the earliest of them.
    func recent(_ key: String, since time: Date) throws -> [String: (count: Int, first: Date)] {
        var found: [String: (count: Int, first: Date)] = [:]
        let rows = try Row.fetchAll(
            db.cachedStatement(
                sql: """
                    SELECT message_key, count(*) AS n, min(at) AS first FROM in_app_impressions
                    WHERE profile_key = ? AND at >= ? GROUP BY message_key
                    """),
            arguments: [key, WireTime.format(time)])
        for row in rows { found[row["message_key"]] = (row["n"], try row.requiredTime("first")) }
        return found
    }

    /// The first message the table holds after `after` (one index seek).
    func message(after: String) throws -> String? {
        try String.fetchOne(
            db, sql: "SELECT message_key FROM in_app_impressions WHERE message_key > ? ORDER BY message_key LIMIT 1",
            arguments: [after])
    }

    /// Deletes up to `limit` impressions of `message` older than `cutoff`; returns how many.
    func prune(message: String, before cutoff: Date, limit: Int) throws -> Int {
        try db.execute(
            sql: """
                DELETE FROM in_app_impressions WHERE (profile_key, message_key, at, installation_id) IN (
                    SELECT profile_key, message_key, at, installation_id FROM in_app_impressions
                    WHERE message_key = ? AND at < ? LIMIT ?)
                """, arguments: [message, WireTime.format(cutoff), limit])
        return db.changesCount
    }
}
