import Foundation
import GRDB
import PartitionStore
import Shared

/// `inbox_installations`: which profile of this partition holds each installation, with its opt-out, kept in step with
/// the contact snapshots (an inbox request names an installation). Named `installations` until notifier v9, like the
/// orchestrator's table of the installations themselves.
struct InboxInstallationsTable {
    static let name = "inbox_installations"

    let db: Database
    /// The table's name: `name`, or the one it had when an earlier migration wrote it.
    private let table: String

    init(_ db: Database, named table: String = Self.name) {
        self.db = db
        self.table = table
    }

    /// The profile's installations are those of `contact` (nil: the profile is gone).
    func index(_ key: String, contact: Contact?) throws {
        try db.executeCached(sql: "DELETE FROM \(table) WHERE profile_key = ?", arguments: [key])
        guard let contact else { return }
        for installation in contact.installations {
            try db.executeCached(
                sql: "INSERT OR REPLACE INTO \(table) (project, installation_id, profile_key, opted_out) VALUES (?, ?, ?, ?)",
                arguments: [contact.project, installation.id, key, installation.optedOut])
        }
    }

    /// The installations the profile holds.
    func ids(_ key: String) throws -> [String] {
        try String.fetchAll(db, sql: "SELECT installation_id FROM \(table) WHERE profile_key = ?", arguments: [key])
    }

    /// The profiles known here to hold an installation, with its opt-out in each.
    func holders(project: String, installationID: String) throws -> [(profileKey: String, optedOut: Bool)] {
        try Row.fetchAll(
            db, sql: "SELECT profile_key, opted_out FROM \(table) WHERE project = ? AND installation_id = ?",
            arguments: [project, installationID]
        ).map { ($0["profile_key"], $0["opted_out"]) }
    }
}
