import Foundation
import GRDB
import PartitionStore
import Shared

/// An event name's aggregate: how many, first and last time, and the last one's label, tags and attributes.
struct EventAggregate {
    var name: String
    var count: Int64
    var first: Date
    var last: Date
    var label: String?
    /// JSON text (an array of strings).
    var tags: String?
    /// JSON text (an object of typed attributes).
    var attributes: String
}

extension EventAggregate {
    init(row: Row) throws {
        self.init(
            name: row["name"], count: row["count"], first: try row.requiredTime("first_at"), last: try row.requiredTime("last_at"), label: row["last_label"],
            tags: row["last_tags"], attributes: row["last_attributes"])
    }
}

/// `event_aggregates`: per profile and event name, the events' count, first and last time, and the last one's label,
/// tags and attributes (segments read them as `e.NAME.*`).
struct EventAggregatesTable {
    let db: Database

    init(_ db: Database) { self.db = db }

    /// Adds an aggregate (one event, or a merged profile's whole history) to the profile's. "Last" values follow the
    /// event time, so that a late, older event does not overwrite newer ones.
    func add(_ key: String, _ aggregate: EventAggregate) throws {
        try db.executeCached(sql: """
                INSERT INTO event_aggregates (profile_key, name, count, first_at, last_at, last_label, last_tags,
                    last_attributes)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                ON CONFLICT (profile_key, name) DO UPDATE SET
                    count = count + excluded.count,
                    first_at = min(first_at, excluded.first_at),
                    last_label = CASE WHEN excluded.last_at >= last_at THEN excluded.last_label ELSE last_label END,
                    last_tags = CASE WHEN excluded.last_at >= last_at THEN excluded.last_tags ELSE last_tags END,
                    last_attributes = CASE WHEN excluded.last_at >= last_at THEN excluded.last_attributes
                        ELSE last_attributes END,
                    last_at = max(last_at, excluded.last_at)
                """,
            arguments: [
                key, aggregate.name, aggregate.count, WireTime.format(aggregate.first), WireTime.format(aggregate.last), aggregate.label, aggregate.tags,
                aggregate.attributes,
            ])
    }

    /// How many event names the profile has.
    func count(_ key: String) throws -> Int {
        try Int.fetchOne(db.cachedStatement(sql: "SELECT count(*) FROM event_aggregates WHERE profile_key = ?"), arguments: [key]) ?? 0
    }

    func has(_ key: String, name: String) throws -> Bool {
        try Bool.fetchOne(
            db.cachedStatement(sql: "SELECT EXISTS (SELECT 1 FROM event_aggregates WHERE profile_key = ? AND name = ?)"),
            arguments: [key, name]) ?? false
    }

    func get(_ key: String, name: String) throws -> EventAggregate? {
        try Row.fetchOne(
            db.cachedStatement(sql: "SELECT * FROM event_aggregates WHERE profile_key = ? AND name = ?"), arguments: [key, name]
        ).map(EventAggregate.init(row:))
    }

    /// Every event aggregate of a profile, in name order.
    func all(_ key: String) throws -> [EventAggregate] {
        try Row.fetchAll(
            db.cachedStatement(sql: "SELECT * FROM event_aggregates WHERE profile_key = ? ORDER BY name"), arguments: [key]
        ).map(EventAggregate.init(row:))
    }

    /// The last tags of each event name of a profile, as stored (JSON arrays).
    func tags(_ key: String) throws -> [String] {
        try String.fetchAll(
            db.cachedStatement(sql: "SELECT last_tags FROM event_aggregates WHERE profile_key = ? AND last_tags IS NOT NULL"),
            arguments: [key])
    }
}
