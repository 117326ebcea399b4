import Foundation
import GRDB
import PartitionStore
import Shared

/// One entry of one profile into a journey (docs/journeys.md, "State and exactly-once").
struct JourneyInstance: Equatable {
    var profileKey: String
    /// The journey's key (`<project>/<id>`).
    var journey: String
    /// The entering record's occurrence: the same entry replayed is the same instance.
    var entryID: String
    /// The version entered (`JourneyDefinition.version`), kept to the end.
    var version: String
    /// Where it is; nil once it ended.
    var node: String?
    /// When it reached `node` (or ended).
    var since: Date
    var enteredAt: Date
    /// The entering trigger (`TriggerContext.json`): what `entry.…` reads.
    var entry: JSONValue
    /// How it ended: `exit <node>`, `exit_rule`, `removed`, … (nil while in flight).
    var ended: String?
}

/// `journey_instances`: the journeys' instances of the partition's profiles, in flight and ended (re-entry reads the
/// ended ones), and `journey_versions`: each version a profile here entered, as published.
struct JourneyInstancesTable {
    let db: Database

    init(_ db: Database) { self.db = db }

    static let createSQL = """
        CREATE TABLE journey_instances (
            profile_key TEXT NOT NULL REFERENCES profiles(profile_key) ON DELETE CASCADE,
            journey TEXT NOT NULL, entry_id TEXT NOT NULL, version TEXT NOT NULL, node TEXT, since TEXT NOT NULL,
            entered_at TEXT NOT NULL, entry TEXT NOT NULL, ended TEXT,
            PRIMARY KEY (profile_key, journey, entry_id)) WITHOUT ROWID;
        CREATE INDEX journey_instances_at_node ON journey_instances (journey, version, node, profile_key) WHERE node IS NOT NULL;
        CREATE TABLE journey_versions (
            journey TEXT NOT NULL, version TEXT NOT NULL, definition TEXT NOT NULL, stored_at TEXT NOT NULL,
            PRIMARY KEY (journey, version)) WITHOUT ROWID;
        """

    /// The ended instances by journey and entry time: what retention prunes.
    static let endedIndexSQL = "CREATE INDEX journey_instances_ended ON journey_instances (journey, entered_at) WHERE node IS NULL"

    private static let columns = "profile_key, journey, entry_id, version, node, since, entered_at, entry, ended"

    /// Writes a new instance; false when this entry was written before (a replay).
    func insert(_ instance: JourneyInstance) throws -> Bool {
        try db.executeCached(
            sql: "INSERT OR IGNORE INTO journey_instances (\(Self.columns)) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            arguments: [
                instance.profileKey, instance.journey, instance.entryID, instance.version, instance.node,
                WireTime.format(instance.since), WireTime.format(instance.enteredAt),
                String(decoding: instance.entry.serialized, as: UTF8.self), instance.ended,
            ])
        return db.changesCount == 1
    }

    /// Moves an instance to `node` (nil with `ended`: it ended), on `version` (a migration changes it).
    func move(_ instance: JourneyInstance) throws {
        try db.executeCached(
            sql: """
                UPDATE journey_instances SET version = ?, node = ?, since = ?, ended = ?
                WHERE profile_key = ? AND journey = ? AND entry_id = ?
                """,
            arguments: [
                instance.version, instance.node, WireTime.format(instance.since), instance.ended, instance.profileKey, instance.journey,
                instance.entryID,
            ])
    }

    /// The instances in flight of `journey` on another version than `version` (through the index by node).
    func inFlight(journey: String, notVersion version: String) throws -> [JourneyInstance] {
        try Row.fetchAll(
            db.cachedStatement(
                sql: "SELECT \(Self.columns) FROM journey_instances WHERE journey = ? AND node IS NOT NULL AND version != ? ORDER BY version, node, profile_key"),
            arguments: [journey, version]
        ).compactMap(Self.instance)
    }

    func instance(key: String, journey: String, entryID: String) throws -> JourneyInstance? {
        try Row.fetchOne(
            db.cachedStatement(sql: "SELECT \(Self.columns) FROM journey_instances WHERE profile_key = ? AND journey = ? AND entry_id = ?"),
            arguments: [key, journey, entryID]
        ).flatMap(Self.instance)
    }

    /// The profile's instances in flight, of every journey, oldest entry first.
    func inFlight(key: String) throws -> [JourneyInstance] {
        try Row.fetchAll(
            db.cachedStatement(
                sql: "SELECT \(Self.columns) FROM journey_instances WHERE profile_key = ? AND node IS NOT NULL ORDER BY entered_at, journey, entry_id"),
            arguments: [key]
        ).compactMap(Self.instance)
    }

    /// How the profile's instances of a journey stand: how many are in flight, and when it last entered.
    func entries(key: String, journey: String) throws -> (inFlight: Int, last: Date?) {
        let row = try Row.fetchOne(
            db.cachedStatement(
                sql: "SELECT count(node), max(entered_at) FROM journey_instances WHERE profile_key = ? AND journey = ?"),
            arguments: [key, journey])
        return (row?[0] ?? 0, (row?[1] as String?).flatMap(WireTime.parse))
    }

    /// How many instances of `journey` wait at each node, per version (the partition's share of "who is where").
    func waiting(journey: String) throws -> [(version: String, node: String, count: Int)] {
        try Row.fetchAll(
            db.cachedStatement(
                sql: """
                    SELECT version, node, count(*) FROM journey_instances WHERE journey = ? AND node IS NOT NULL
                    GROUP BY version, node ORDER BY version, node
                    """),
            arguments: [journey]
        ).map { ($0[0], $0[1], $0[2]) }
    }

    /// How many instances of every journey wait at each node now, whatever their version (the partition's share of
    /// `herald_journey_waiting`).
    func waitingByNode() throws -> [(journey: String, node: String, count: Int)] {
        try Row.fetchAll(
            db.cachedStatement(
                sql: "SELECT journey, node, count(*) FROM journey_instances WHERE node IS NOT NULL GROUP BY journey, node")
        ).map { ($0[0], $0[1], $0[2]) }
    }

    /// The first journey after `after` with an ended instance here.
    func journeyWithEnded(after: String) throws -> String? {
        try String.fetchOne(
            db.cachedStatement(
                sql: "SELECT journey FROM journey_instances INDEXED BY journey_instances_ended WHERE node IS NULL AND journey > ? ORDER BY journey LIMIT 1"),
            arguments: [after])
    }

    /// Deletes up to `limit` instances of `journey` that ended and entered before `cutoff`; returns how many.
    func pruneEnded(journey: String, enteredBefore cutoff: Date, limit: Int) throws -> Int {
        try db.execute(
            sql: """
                DELETE FROM journey_instances WHERE (profile_key, journey, entry_id) IN (
                    SELECT profile_key, journey, entry_id FROM journey_instances INDEXED BY journey_instances_ended
                    WHERE node IS NULL AND journey = ? AND entered_at < ? LIMIT ?)
                """,
            arguments: [journey, WireTime.format(cutoff), limit])
        return db.changesCount
    }

    /// The versions of `journey` kept in this partition (one row each).
    func versions(journey: String) throws -> [String] {
        try String.fetchAll(db.cachedStatement(sql: "SELECT version FROM journey_versions WHERE journey = ? ORDER BY version"), arguments: [journey])
    }

    /// The first `limit` instances of `journey`'s `version` at `node` after the profile key `after`, by profile key
    /// (a keyset read of the index on (journey, version, node, profile_key)).
    func atNode(journey: String, version: String, node: String, after: String, limit: Int) throws -> [JourneyInstance] {
        try Row.fetchAll(
            db.cachedStatement(
                sql: """
                    SELECT \(Self.columns) FROM journey_instances INDEXED BY journey_instances_at_node
                    WHERE journey = ? AND version = ? AND node = ? AND profile_key > ? ORDER BY profile_key LIMIT ?
                    """),
            arguments: [journey, version, node, after, limit]
        ).compactMap(Self.instance)
    }

    private static func instance(_ row: Row) -> JourneyInstance? {
        guard let since = WireTime.parse(row[5]), let entered = WireTime.parse(row[6]),
            let entry = try? JSONParser.parse(Array((row[7] as String).utf8))
        else { return nil }
        return JourneyInstance(
            profileKey: row[0], journey: row[1], entryID: row[2], version: row[3], node: row[4], since: since, enteredAt: entered,
            entry: entry, ended: row[8])
    }

    // MARK: Versions

    /// Keeps a version's definition as published (once: a version's text never changes).
    func keep(_ journey: JourneyDefinition, at time: Date) throws {
        try db.executeCached(
            sql: "INSERT OR IGNORE INTO journey_versions (journey, version, definition, stored_at) VALUES (?, ?, ?, ?)",
            arguments: [journey.key, journey.version, String(decoding: journey.source.serialized, as: UTF8.self), WireTime.format(time)])
    }

    /// A version kept here, as published.
    func definition(journey: String, version: String) throws -> JSONValue? {
        guard
            let text = try String.fetchOne(
                db.cachedStatement(sql: "SELECT definition FROM journey_versions WHERE journey = ? AND version = ?"),
                arguments: [journey, version])
        else { return nil }
        return try? JSONParser.parse(Array(text.utf8))
    }
}
