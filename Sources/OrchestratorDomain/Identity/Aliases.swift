import Foundation
import GRDB
import PartitionStore
import Shared

/// Braze's user aliases (braze-rules §1.3, rule 15; docs/orchestrator.md "Aliases"). An alias's *home*
/// (`<project>/alias/<label>/<name>`) keeps which profile the alias belongs to, and until one claims it, the alias-only
/// profile that writes naming the alias build up there. A profile keeps its aliases, one name per label. As for
/// installations, every change goes through the home, whose records to any one key are produced in order:
///
/// - a profile claims an alias (`alias`: Braze's `/users/alias/new` with an external id, `/users/identify`), sending
///   `alias_claim` to the home; the first claim wins, a later one by another profile is refused (`alias_refused`) and
///   that profile forgets the alias;
/// - a claim that finds an alias-only profile moves its history to the claimer (`alias_move`), merged only if the
///   claimer had no profile before (braze-rules §1.2), and the alias-only profile is gone either way;
/// - writes that name the alias reach the home and are forwarded to the profile holding it;
/// - a profile that gives the alias up (another name for the label, or deleted) unlinks it (`alias_unlink`).
enum AliasLinks {
    static func link(_ db: Database, project: String, alias: UserAlias) throws -> String? {
        try String.fetchOne(
            db.cachedStatement(sql: "SELECT custom_id FROM alias_links WHERE project = ? AND label = ? AND name = ?"),
            arguments: [project, alias.label, alias.name])
    }

    static func setLink(_ db: Database, project: String, alias: UserAlias, customID: String, at: String) throws {
        try db.executeCached(sql: """
                INSERT INTO alias_links (project, label, name, custom_id, linked_at) VALUES (?, ?, ?, ?, ?)
                ON CONFLICT (project, label, name) DO UPDATE SET custom_id = excluded.custom_id, linked_at = excluded.linked_at
                """, arguments: [project, alias.label, alias.name, customID, at])
    }

    static func removeLink(_ db: Database, project: String, alias: UserAlias, customID: String) throws {
        try db.executeCached(
            sql: "DELETE FROM alias_links WHERE project = ? AND label = ? AND name = ? AND custom_id = ?",
            arguments: [project, alias.label, alias.name, customID])
    }

    /// A profile's aliases, by label.
    static func aliases(_ db: Database, key: String) throws -> [UserAlias] {
        try Row.fetchAll(
            db.cachedStatement(sql: "SELECT label, name FROM profile_aliases WHERE profile_key = ? ORDER BY label"),
            arguments: [key]
        ).map { UserAlias(label: $0["label"], name: $0["name"]) }
    }

    static func name(_ db: Database, key: String, label: String) throws -> String? {
        try String.fetchOne(
            db.cachedStatement(sql: "SELECT name FROM profile_aliases WHERE profile_key = ? AND label = ?"), arguments: [key, label])
    }
}

extension ApplyContext {
    /// A client's write that names an alias: at the alias's home (no custom ID) it is forwarded to the profile holding
    /// the alias, or applied to the alias-only profile; at a profile (`alias` op, or a forwarded write) it claims the
    /// alias or is applied if the profile still holds it.
    mutating func routeAliasWrite() throws {
        guard let alias = write.alias else { return }
        let write = self.write
        if write.customID == nil {
            let linked = try AliasLinks.link(db, project: write.project, alias: alias)
            if write.op == .alias {
                // Braze's `/users/alias/new` without an external id: the alias-only profile, unless a user has it.
                guard try firstTime(), linked == nil else { return }
                try touch()
                return
            }
            if let linked {
                try forward(to: linked)
                return
            }
            guard try firstTime(), try !skipsMissingProfile() else { return }
            try applyOp()
            return
        }
        if write.op == .alias {
            guard try firstTime() else { return }
            try claim(alias)
            return
        }
        if write.forwarded, try AliasLinks.name(db, key: write.profileKey, label: alias.label) != alias.name {
            // Forwarded here, but this profile no longer holds the alias: back to its home.
            try forward(to: nil)
            return
        }
        guard try firstTime(), try !skipsMissingProfile() else { return }
        try applyOp()
    }

    /// At the profile: the alias is this profile's (replacing another name of its label), claimed at the alias's home.
    mutating func claim(_ alias: UserAlias) throws {
        let write = self.write
        guard let customID = write.customID else { return }
        let key = write.profileKey
        let existed = try ProfileEdits.exists(db, key: key)
        if try ProfileEdits.ensureProfile(db, key: key, project: write.project, customID: customID, at: write.receivedAt) {
            changed(["b.created_at", "b.timezone"])
        }
        let current = try AliasLinks.name(db, key: key, label: alias.label)
        guard current != alias.name else { return }
        if let current {
            let previous = UserAlias(label: alias.label, name: current)
            emit(
                .aliasUnlink, suffix: "unlink", key: ProfileKey.alias(write.project, previous), alias: previous,
                fields: [JSONMember("target_custom_id", .string(customID))])
        }
        try db.executeCached(sql: """
                INSERT INTO profile_aliases (profile_key, label, name, since) VALUES (?, ?, ?, ?)
                ON CONFLICT (profile_key, label) DO UPDATE SET name = excluded.name, since = excluded.since
                """, arguments: [key, alias.label, alias.name, write.time])
        emit(
            .aliasClaim, suffix: "claim", key: ProfileKey.alias(write.project, alias), alias: alias,
            fields: [JSONMember("target_custom_id", .string(customID)), JSONMember("merge", .bool(!existed))])
    }

    /// The orchestrator's alias records.
    mutating func applyAliasRecord() throws {
        let write = self.write
        guard let alias = write.alias else { return }
        switch write.op {
        case .aliasClaim:
            guard let target = write["target_custom_id"]?.stringValue else { return }
            let targetKey = ProfileKey.profile(write.project, target)
            if let holder = try AliasLinks.link(db, project: write.project, alias: alias) {
                if holder != target {
                    emit(.aliasRefused, suffix: "refused", key: targetKey, customID: target, alias: alias)
                }
                return
            }
            try AliasLinks.setLink(db, project: write.project, alias: alias, customID: target, at: write.time)
            let home = write.profileKey
            guard try ProfileEdits.exists(db, key: home) else { return }
            if write["merge"] == .bool(true), let history = try ProfileEdits.history(db, key: home) {
                emit(.aliasMove, suffix: "move", key: targetKey, customID: target, alias: alias, fields: [JSONMember("merge", history)])
            }
            // Merged or not, the alias-only profile is done (braze-rules §1.2: its history is in the profile now, or
            // orphaned).
            if try ProfileEdits.delete(db, key: home) {
                outputs.append(PendingOutput(topic: HeraldTopic.contacts.name, key: home, value: nil))
            }
        case .aliasRefused:
            try db.executeCached(
                sql: "DELETE FROM profile_aliases WHERE profile_key = ? AND label = ? AND name = ?",
                arguments: [write.profileKey, alias.label, alias.name])
        case .aliasUnlink:
            guard let target = write["target_custom_id"]?.stringValue else { return }
            try AliasLinks.removeLink(db, project: write.project, alias: alias, customID: target)
        case .aliasMove:
            let key = write.profileKey
            try ProfileEdits.ensureProfile(db, key: key, project: write.project, customID: write.customID, at: write.receivedAt)
            if let history = write["merge"] { try ProfileEdits.merge(db, key: key, history: history) }
            contactsChanged(key)
        default:
            break
        }
    }

    /// A deleted profile's aliases are free again.
    mutating func unlinkAliases(of key: String) throws {
        guard let customID = write.customID else { return }
        for alias in try AliasLinks.aliases(db, key: key) {
            emit(
                .aliasUnlink, suffix: "unlink \(alias.label)", key: ProfileKey.alias(write.project, alias), alias: alias,
                fields: [JSONMember("target_custom_id", .string(customID))])
        }
    }
}
