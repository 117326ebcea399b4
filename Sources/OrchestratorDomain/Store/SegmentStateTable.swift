import Foundation
import GRDB
import PartitionStore
import Shared

/// `segment_state`: each segment's condition as last backfilled in this partition (a new or changed condition is
/// backfilled again).
struct SegmentStateTable {
    let db: Database

    init(_ db: Database) { self.db = db }

    /// Segment key → condition text.
    func all() throws -> [String: String] {
        var stored: [String: String] = [:]
        for row in try Row.fetchAll(db, sql: "SELECT segment_key, condition FROM segment_state") {
            stored[row["segment_key"]] = row["condition"]
        }
        return stored
    }

    /// The condition a segment was last backfilled with in this partition (nil: never, or forgotten since).
    func condition(of segment: String) throws -> String? {
        try String.fetchOne(
            db.cachedStatement(sql: "SELECT condition FROM segment_state WHERE segment_key = ?"), arguments: [segment])
    }

    func backfilled(_ segment: String, condition: String, at time: Date) throws {
        try db.execute(
            sql: """
                INSERT INTO segment_state (segment_key, condition, backfilled_at) VALUES (?, ?, ?)
                ON CONFLICT (segment_key) DO UPDATE SET condition = excluded.condition, backfilled_at = excluded.backfilled_at
                """, arguments: [segment, condition, WireTime.format(time)])
    }

    func delete(_ segment: String) throws {
        try db.execute(sql: "DELETE FROM segment_state WHERE segment_key = ?", arguments: [segment])
    }
}
