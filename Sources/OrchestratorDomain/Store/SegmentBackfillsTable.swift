import Foundation
import GRDB
import PartitionStore
import Shared

/// `segment_backfills`: the segments being backfilled in this partition, with the last profile key evaluated (nil:
/// none yet). The profiles up to it are known to the segment; the others are not until the backfill reaches them.
struct SegmentBackfillsTable {
    let db: Database

    init(_ db: Database) { self.db = db }

    /// Starts (or keeps) the backfill of a segment's condition: a backfill of the same condition goes on from where it
    /// stood; another condition starts from the first profile.
    func start(_ segment: String, condition: String) throws {
        try db.execute(
            sql: """
                INSERT INTO segment_backfills (segment_key, condition, after) VALUES (?, ?, NULL)
                ON CONFLICT (segment_key) DO UPDATE SET condition = excluded.condition, after = NULL
                WHERE segment_backfills.condition <> excluded.condition
                """, arguments: [segment, condition])
    }

    /// Where a segment's backfill stands: its condition and the last profile key evaluated; nil when none runs.
    func cursor(_ segment: String) throws -> (condition: String, after: String?)? {
        guard let row = try Row.fetchOne(
            db, sql: "SELECT condition, after FROM segment_backfills WHERE segment_key = ?", arguments: [segment])
        else { return nil }
        return (row["condition"], row["after"])
    }

    /// The segment keys being backfilled.
    func all() throws -> [String] {
        try String.fetchAll(db, sql: "SELECT segment_key FROM segment_backfills")
    }

    /// The backfills of the project's segments that have not evaluated the profile `key` yet, with their conditions:
    /// one statement that finds nothing, on the write path, when no backfill runs.
    func notReached(key: String, project: String) throws -> [(segment: String, condition: String)] {
        try Row.fetchAll(
            db.cachedStatement(sql: "SELECT segment_key, condition FROM segment_backfills WHERE after IS NULL OR after < ?"),
            arguments: [key]
        ).map { ($0["segment_key"] as String, $0["condition"] as String) }.filter { $0.segment.hasPrefix(project + "/") }
    }

    func advance(_ segment: String, after: String) throws {
        try db.execute(sql: "UPDATE segment_backfills SET after = ? WHERE segment_key = ?", arguments: [after, segment])
    }

    func delete(_ segment: String) throws {
        try db.execute(sql: "DELETE FROM segment_backfills WHERE segment_key = ?", arguments: [segment])
    }
}
