import Foundation
import GRDB
import PartitionStore
import Shared

/// An installation's link to a profile, kept at its home key.
struct InstallationLink {
    /// nil: logged out (anonymous).
    var customID: String?
    var linkedAt: Date
}

/// `installation_links`: at an installation's home, the profile it belongs to (docs/orchestrator.md, Identity).
struct InstallationLinksTable {
    let db: Database

    init(_ db: Database) { self.db = db }

    /// A row's owner (`RowOwners`): the installation's home profile, whose answers read the link
    /// (`InstallationHolder`). `ProfileKey.home` in SQL.
    static let ownerKey = "row.project || '/install/' || row.installation_id"

    func link(project: String, installationID: String) throws -> InstallationLink? {
        try Row.fetchOne(
            db.cachedStatement(
                sql: "SELECT custom_id, linked_at FROM installation_links WHERE project = ? AND installation_id = ?"),
            arguments: [project, installationID]
        ).map { InstallationLink(customID: $0["custom_id"], linkedAt: try $0.requiredTime("linked_at")) }
    }

    func setLink(project: String, installationID: String, customID: String?, at time: Date) throws {
        try db.executeCached(sql: """
                INSERT INTO installation_links (project, installation_id, custom_id, linked_at) VALUES (?, ?, ?, ?)
                ON CONFLICT (project, installation_id) DO UPDATE SET custom_id = excluded.custom_id,
                    linked_at = excluded.linked_at
                """, arguments: [project, installationID, customID, WireTime.format(time)])
    }

    func delete(project: String, installationID: String) throws {
        try db.executeCached(
            sql: "DELETE FROM installation_links WHERE project = ? AND installation_id = ?", arguments: [project, installationID])
    }
}
