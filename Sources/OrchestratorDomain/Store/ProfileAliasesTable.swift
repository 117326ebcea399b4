import Foundation
import GRDB
import PartitionStore
import Shared

/// `profile_aliases`: a profile's Braze aliases, one name per label.
struct ProfileAliasesTable {
    let db: Database

    init(_ db: Database) { self.db = db }

    /// A profile's aliases, by label.
    func aliases(_ key: String) throws -> [UserAlias] {
        try Row.fetchAll(
            db.cachedStatement(sql: "SELECT label, name FROM profile_aliases WHERE profile_key = ? ORDER BY label"),
            arguments: [key]
        ).map { UserAlias(label: $0["label"], name: $0["name"]) }
    }

    /// The profile's name for `label`.
    func name(_ key: String, label: String) throws -> String? {
        try String.fetchOne(
            db.cachedStatement(sql: "SELECT name FROM profile_aliases WHERE profile_key = ? AND label = ?"), arguments: [key, label])
    }

    /// The alias is the profile's (replacing another name of its label).
    func set(_ key: String, _ alias: UserAlias, since time: Date) throws {
        try db.executeCached(sql: """
                INSERT INTO profile_aliases (profile_key, label, name, since) VALUES (?, ?, ?, ?)
                ON CONFLICT (profile_key, label) DO UPDATE SET name = excluded.name, since = excluded.since
                """, arguments: [key, alias.label, alias.name, WireTime.format(time)])
    }

    func delete(_ key: String, _ alias: UserAlias) throws {
        try db.executeCached(
            sql: "DELETE FROM profile_aliases WHERE profile_key = ? AND label = ? AND name = ?",
            arguments: [key, alias.label, alias.name])
    }
}
