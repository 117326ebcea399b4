import Foundation
import GRDB
import PartitionStore
import Shared

/// `alias_links`: at an alias's home key, the custom ID of the profile that holds the alias (the first claim wins).
struct AliasLinksTable {
    let db: Database

    init(_ db: Database) { self.db = db }

    /// The custom ID holding the alias.
    func holder(project: String, _ alias: UserAlias) throws -> String? {
        try String.fetchOne(
            db.cachedStatement(sql: "SELECT custom_id FROM alias_links WHERE project = ? AND label = ? AND name = ?"),
            arguments: [project, alias.label, alias.name])
    }

    func set(project: String, _ alias: UserAlias, customID: String, at time: Date) throws {
        try db.executeCached(sql: """
                INSERT INTO alias_links (project, label, name, custom_id, linked_at) VALUES (?, ?, ?, ?, ?)
                ON CONFLICT (project, label, name) DO UPDATE SET custom_id = excluded.custom_id, linked_at = excluded.linked_at
                """, arguments: [project, alias.label, alias.name, customID, WireTime.format(time)])
    }

    /// Forgets the link, if `customID` still holds the alias.
    func remove(project: String, _ alias: UserAlias, customID: String) throws {
        try db.executeCached(
            sql: "DELETE FROM alias_links WHERE project = ? AND label = ? AND name = ? AND custom_id = ?",
            arguments: [project, alias.label, alias.name, customID])
    }
}
