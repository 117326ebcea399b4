import Foundation
import GRDB
import PartitionStore
import Shared

/// `installations` (the notifier's): which profile of this partition holds each installation, with its opt-out, kept in
/// step with the contact snapshots (an inbox request names an installation).
struct InboxInstallationsTable {
    let db: Database

    init(_ db: Database) { self.db = db }

    /// The profile's installations are those of `contact` (nil: the profile is gone).
    func index(_ key: String, contact: Contact?) throws {
        try db.executeCached(sql: "DELETE FROM installations WHERE profile_key = ?", arguments: [key])
        guard let contact else { return }
        for installation in contact.installations {
            try db.executeCached(
                sql: "INSERT OR REPLACE INTO installations (project, installation_id, profile_key, opted_out) VALUES (?, ?, ?, ?)",
                arguments: [contact.project, installation.id, key, installation.optedOut])
        }
    }

    /// The installations the profile holds.
    func ids(_ key: String) throws -> [String] {
        try String.fetchAll(db, sql: "SELECT installation_id FROM installations WHERE profile_key = ?", arguments: [key])
    }

    /// The profiles known here to hold an installation, with its opt-out in each.
    func holders(project: String, installationID: String) throws -> [(profileKey: String, optedOut: Bool)] {
        try Row.fetchAll(
            db, sql: "SELECT profile_key, opted_out FROM installations WHERE project = ? AND installation_id = ?",
            arguments: [project, installationID]
        ).map { ($0["profile_key"], $0["opted_out"]) }
    }
}
