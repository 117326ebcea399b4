import Foundation
import GRDB
import PartitionStore
import Shared

/// `geofence_entries`: each profile's last counted entry into each geofence (`<set key>/<geofence id>`), from which
/// the set's cooldown counts (`GeofenceReports`).
struct GeofenceEntriesTable {
    let db: Database

    init(_ db: Database) { self.db = db }

    /// Counts an entry at `time` unless the last one counted is less than `cooldown` before it; returns whether it did.
    func enter(_ key: String, geofence: String, at time: Date, cooldown: TimeInterval) throws -> Bool {
        let last = try Row.fetchOne(
            db.cachedStatement(sql: "SELECT entered_at FROM geofence_entries WHERE profile_key = ? AND geofence = ?"),
            arguments: [key, geofence])?.time("entered_at")
        if let last, time.timeIntervalSince(last) < cooldown { return false }
        try db.executeCached(
            sql: """
                INSERT INTO geofence_entries (profile_key, geofence, entered_at) VALUES (?, ?, ?)
                ON CONFLICT (profile_key, geofence) DO UPDATE SET entered_at = excluded.entered_at
                """, arguments: [key, geofence, WireTime.format(time)])
        return true
    }

    /// The profile's last counted entries (what an identification carries to the profile it merges into).
    func all(_ key: String) throws -> [(geofence: String, at: Date)] {
        try Row.fetchAll(
            db.cachedStatement(sql: "SELECT geofence, entered_at FROM geofence_entries WHERE profile_key = ? ORDER BY geofence"),
            arguments: [key]
        ).compactMap { row in try row.time("entered_at").map { (row["geofence"], $0) } }
    }

    /// Keeps the later of the profile's entry and a merged one.
    func merge(_ key: String, geofence: String, at time: Date) throws {
        try db.executeCached(
            sql: """
                INSERT INTO geofence_entries (profile_key, geofence, entered_at) VALUES (?, ?, ?)
                ON CONFLICT (profile_key, geofence) DO UPDATE SET entered_at = max(entered_at, excluded.entered_at)
                """, arguments: [key, geofence, WireTime.format(time)])
    }
}
