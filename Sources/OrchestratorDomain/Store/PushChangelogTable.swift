import Foundation
import GRDB
import PartitionStore
import Shared

/// A `push_changelog` entry.
struct PushChangelogEntry: FetchableRecord {
    var installationID: String
    var at: Date
    /// `registered`, `moved_in`, `moved_out`, `invalidated`, `detached`.
    var change: String
    var token: String?
    var detail: String?

    init(row: Row) throws {
        installationID = row["installation_id"]
        at = try row.requiredTime("at")
        change = row["change"]
        token = row["token"]
        detail = row["detail"]
    }
}

/// `push_changelog`: what happened to a profile's push tokens (registered, moved in or out, invalidated, detached), the
/// latest `kept` entries per profile.
struct PushChangelogTable {
    let db: Database

    init(_ db: Database) { self.db = db }

    /// Entries kept per profile: the latest (docs/retention.md).
    static let kept = 50

    /// Adds an entry and drops what is beyond the latest `kept`, through the `(profile_key, id)` index: the table holds
    /// at most that many rows per profile, whatever the traffic.
    func log(
        _ key: String, installationID: String, at time: Date, change: String, token: String?, detail: String? = nil
    ) throws {
        try db.executeCached(sql: """
                INSERT INTO push_changelog (profile_key, installation_id, at, change, token, detail)
                VALUES (?, ?, ?, ?, ?, ?)
                """, arguments: [key, installationID, WireTime.format(time), change, token, detail])
        try db.executeCached(sql: """
                DELETE FROM push_changelog WHERE profile_key = ?1 AND id <= (
                    SELECT id FROM push_changelog WHERE profile_key = ?1 ORDER BY id DESC LIMIT 1 OFFSET ?2)
                """, arguments: [key, Self.kept])
    }

    /// A profile's entries, oldest first.
    func all(_ key: String) throws -> [PushChangelogEntry] {
        try PushChangelogEntry.fetchAll(db.cachedStatement(sql: "SELECT * FROM push_changelog WHERE profile_key = ? ORDER BY id"), arguments: [key])
    }
}
