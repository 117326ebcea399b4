import Foundation
import GRDB
import PartitionStore
import Shared

/// `segment_members`: which profiles are in which segment, since when (kept exact at every write, `SegmentEvaluator`).
struct SegmentMembersTable {
    let db: Database

    init(_ db: Database) { self.db = db }

    /// The segments a profile is in.
    func segments(of key: String) throws -> [String] {
        try String.fetchAll(
            db.cachedStatement(sql: "SELECT segment_key FROM segment_members WHERE profile_key = ?"), arguments: [key])
    }

    /// The segments a profile is in, in key order (for views).
    func segmentsInOrder(of key: String) throws -> [String] {
        try String.fetchAll(
            db.cachedStatement(sql: "SELECT segment_key FROM segment_members WHERE profile_key = ? ORDER BY segment_key"),
            arguments: [key])
    }

    func contains(segment: String, key: String) throws -> Bool {
        try Bool.fetchOne(
            db.cachedStatement(sql: "SELECT 1 FROM segment_members WHERE segment_key = ? AND profile_key = ?"),
            arguments: [segment, key]) ?? false
    }

    func insert(segment: String, key: String, since time: Date) throws {
        try db.executeCached(
            sql: "INSERT INTO segment_members (segment_key, profile_key, since) VALUES (?, ?, ?)", arguments: [segment, key, WireTime.format(time)])
    }

    func delete(segment: String, key: String) throws {
        try db.executeCached(
            sql: "DELETE FROM segment_members WHERE segment_key = ? AND profile_key = ?", arguments: [segment, key])
    }

    /// The profile leaves every segment.
    func deleteAll(key: String) throws {
        try db.executeCached(sql: "DELETE FROM segment_members WHERE profile_key = ?", arguments: [key])
    }

    /// Every member of a segment leaves it (it changed or is gone).
    func deleteSegment(_ segment: String) throws {
        try db.execute(sql: "DELETE FROM segment_members WHERE segment_key = ?", arguments: [segment])
    }

    /// Up to `limit` members of a segment after `after`, in key order (a scheduled run's page).
    func page(segment: String, after: String?, limit: Int) throws -> [String] {
        try String.fetchAll(
            db.cachedStatement(sql: """
                SELECT profile_key FROM segment_members WHERE segment_key = ? AND profile_key > ?
                ORDER BY profile_key LIMIT ?
                """),
            arguments: [segment, after ?? "", limit])
    }

    /// The members among the profiles `first`…`last` (a backfill's range scan).
    func members(segment: String, from first: String, through last: String) throws -> Set<String> {
        Set(
            try String.fetchAll(
                db.cachedStatement(
                    sql: "SELECT profile_key FROM segment_members WHERE segment_key = ? AND profile_key BETWEEN ? AND ?"),
                arguments: [segment, first, last]))
    }

    /// Up to `limit` members after `after`, in key order, each with its own time zone and its most recently seen
    /// installation's (a local-time run's page: one statement for the page).
    func pageWithTimeZones(segment: String, after: String?, limit: Int) throws
        -> [(key: String, timezone: String?, installationTimezone: String?)]
    {
        try Row.fetchAll(
            db.cachedStatement(sql: """
                SELECT m.profile_key, p.timezone, (
                    SELECT i.timezone FROM installations i WHERE i.profile_key = m.profile_key AND i.timezone IS NOT NULL
                    ORDER BY i.last_visit_at DESC, i.installation_id LIMIT 1) AS installation_timezone
                FROM segment_members m JOIN profiles p ON p.profile_key = m.profile_key
                WHERE m.segment_key = ? AND m.profile_key > ?
                ORDER BY m.profile_key LIMIT ?
                """),
            arguments: [segment, after ?? "", limit]
        ).map { ($0[0], $0[1], $0[2]) }
    }
}
