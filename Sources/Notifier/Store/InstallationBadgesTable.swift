import Foundation
import GRDB
import PartitionStore
import Shared

/// `installation_badges`: the badge each installation shows, as the sends with a badge left it (`Badges`).
struct InstallationBadgesTable {
    static let name = "installation_badges"
    let db: Database

    init(_ db: Database) { self.db = db }

    func count(project: String, installationID: String) throws -> Int? {
        try Int.fetchOne(
            db.cachedStatement(sql: "SELECT count FROM installation_badges WHERE project = ? AND installation_id = ?"),
            arguments: [project, installationID])
    }

    /// Forgets an installation's count (it left the profiles of this partition, or was deleted with its profile).
    /// Returns how many rows went (0 or 1).
    @discardableResult
    func delete(project: String, installationID: String) throws -> Int {
        try db.executeCached(
            sql: "DELETE FROM installation_badges WHERE project = ? AND installation_id = ?", arguments: [project, installationID])
        return db.changesCount
    }

    func set(project: String, installationID: String, count: Int, at time: Date) throws {
        try db.executeCached(sql: """
                INSERT INTO installation_badges (project, installation_id, count, updated_at) VALUES (?, ?, ?, ?)
                ON CONFLICT (project, installation_id) DO UPDATE SET count = excluded.count, updated_at = excluded.updated_at
                """, arguments: [project, installationID, count, WireTime.format(time)])
    }
}
