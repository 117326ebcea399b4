import Foundation
import GRDB
import PartitionStore
import Shared

/// The link of an installation to a profile, kept at the installation's home key.
enum Identity {
    struct Link {
        /// nil: logged out (anonymous).
        var customID: String?
        var linkedAt: String
    }

    static func link(_ db: Database, project: String, installationID: String) throws -> Link? {
        try Row.fetchOne(
            db.cachedStatement(
                sql: "SELECT custom_id, linked_at FROM installation_links WHERE project = ? AND installation_id = ?"),
            arguments: [project, installationID]
        ).map { Link(customID: $0["custom_id"], linkedAt: $0["linked_at"]) }
    }

    static func setLink(_ db: Database, project: String, installationID: String, customID: String?, at: String) throws {
        try db.executeCached(sql: """
                INSERT INTO installation_links (project, installation_id, custom_id, linked_at) VALUES (?, ?, ?, ?)
                ON CONFLICT (project, installation_id) DO UPDATE SET custom_id = excluded.custom_id,
                    linked_at = excluded.linked_at
                """, arguments: [project, installationID, customID, at])
    }
}

extension ApplyContext {
    // MARK: At the profile

    /// Joins the write's installation to its profile (identify, or an app write naming its user): a placeholder row
    /// here at once, and a link request to the installation's home, which moves the installation's state here. The
    /// anonymous history merges only if the custom ID had no profile yet (braze-rules §1.2: "only happens once").
    mutating func attach() throws {
        let write = self.write
        guard let customID = write.customID, let installationID = write.installationID else { return }
        let key = write.profileKey
        let existed = try ProfileEdits.exists(db, key: key)
        try ProfileEdits.ensureProfile(db, key: key, project: write.project, customID: customID, at: write.receivedAt)
        try Installations.touch(db, write: write, key: key)
        emit(
            .installLink, suffix: "link", key: write.homeKey, installationID: installationID,
            fields: [JSONMember("target_custom_id", .string(customID)), JSONMember("merge", .bool(!existed))])
    }

    /// Wipe named by an identified app: the installation leaves the profile at once; its home forgets the link and
    /// the anonymous data.
    mutating func wipeAtProfile() throws {
        let write = self.write
        guard let customID = write.customID, let installationID = write.installationID else { return }
        if try Installations.delete(db, key: write.profileKey, installationID: installationID) {
            contactsChanged(write.profileKey)
        }
        emit(.wipe, suffix: "home", key: write.homeKey, fields: [JSONMember("from_custom_id", .string(customID))])
    }

    /// Delete: the profile and its rows go; each of its installations' homes forgets the link.
    mutating func deleteProfile() throws {
        let write = self.write
        let key = write.profileKey
        let installations = try String.fetchAll(
            db, sql: "SELECT installation_id FROM installations WHERE profile_key = ? ORDER BY installation_id",
            arguments: [key])
        for installationID in installations {
            emit(
                .installUnlink, suffix: "unlink \(installationID)", key: ProfileKey.home(write.project, installationID),
                installationID: installationID,
                fields: write.customID.map { [JSONMember("target_custom_id", .string($0))] } ?? [])
        }
        try unlinkAliases(of: key)
        _ = try ProfileEdits.delete(db, key: key)
        outputs.append(PendingOutput(topic: HeraldTopic.contacts.name, key: key, value: nil))
    }

    // MARK: At the installation's home

    /// Logout: the link goes; the profile gives the installation back (it becomes anonymous again, here).
    mutating func logout() throws {
        let write = self.write
        guard let installationID = write.installationID,
            let link = try Identity.link(db, project: write.project, installationID: installationID),
            let customID = link.customID, write.time >= link.linkedAt
        else { return }
        try Identity.setLink(db, project: write.project, installationID: installationID, customID: nil, at: write.time)
        emit(.installDetach, suffix: "detach", key: ProfileKey.profile(write.project, customID), customID: customID)
    }

    /// Wipe at the home: the link and the anonymous data go; a profile that still holds the installation (other than
    /// the one that already dropped it) drops it.
    mutating func wipeAtHome(from: String?) throws {
        let write = self.write
        guard let installationID = write.installationID else { return }
        let link = try Identity.link(db, project: write.project, installationID: installationID)
        try db.executeCached(sql: "DELETE FROM installation_links WHERE project = ? AND installation_id = ?",
            arguments: [write.project, installationID])
        if let customID = link?.customID, customID != from {
            emit(.installDrop, suffix: "drop", key: ProfileKey.profile(write.project, customID), customID: customID)
        }
        if try ProfileEdits.delete(db, key: write.homeKey) {
            outputs.append(PendingOutput(topic: HeraldTopic.contacts.name, key: write.homeKey, value: nil))
        }
    }

    // MARK: The orchestrator's own records

    mutating func applyInternal() throws {
        let write = self.write
        let installationID = write.installationID ?? ""
        // A move reaching the home of an installation that is linked follows the link (not applied here).
        if write.op == .installMove, write.customID == nil,
            let linked = try Identity.link(db, project: write.project, installationID: installationID)?.customID
        {
            try forward(to: linked)
            return
        }
        guard try firstTime() else { return }
        switch write.op {
        case .installLink:
            guard let target = write["target_custom_id"]?.stringValue else { return }
            try link(to: target, merge: write["merge"] == .bool(true))
        case .installUnlink:
            let link = try Identity.link(db, project: write.project, installationID: installationID)
            if let link, link.customID != nil, link.customID == write["target_custom_id"]?.stringValue {
                try Identity.setLink(db, project: write.project, installationID: installationID, customID: nil, at: write.time)
            }
        case .installDetach:
            let key = write.profileKey
            guard let row = try Installations.row(db, key: key, installationID: installationID) else { return }
            _ = try Installations.delete(db, key: key, installationID: installationID)
            try Installations.log(db, key: key, installationID: installationID, at: write.time, change: "detached", token: row["token"])
            contactsChanged(key)
            emit(
                .installMove, suffix: "move", key: write.homeKey,
                fields: [JSONMember("installation", Installations.json(row))])
        case .installMove:
            try receiveInstallation()
        case .installDrop:
            if try Installations.delete(db, key: write.profileKey, installationID: installationID) {
                contactsChanged(write.profileKey)
            }
        case .wipe:
            try wipeAtHome(from: write["from_custom_id"]?.stringValue)
        case .tokenClaim:
            try claimToken()
        case .tokenRelease:
            try releaseToken()
        case .aliasClaim, .aliasRefused, .aliasUnlink, .aliasMove:
            try applyAliasRecord()
        default:
            outputs.append(ProfileApplier.deadLetter(write.record, reason: "\(write.op.rawValue) is not an orchestrator op"))
        }
    }

    /// At the home: the installation now belongs to `target`. A link older than the current one is refused (its
    /// profile gives the installation back); the previous holder gives it up, or, if it was anonymous, the home sends
    /// its state (and, on a first identification, the anonymous history) and forgets the anonymous profile.
    mutating func link(to target: String, merge: Bool) throws {
        let write = self.write
        guard let installationID = write.installationID else { return }
        let current = try Identity.link(db, project: write.project, installationID: installationID)
        let targetKey = ProfileKey.profile(write.project, target)
        if let current, current.linkedAt > write.time {
            if current.customID != target {
                emit(.installDetach, suffix: "stale", key: targetKey, customID: target)
            }
            return
        }
        try Identity.setLink(db, project: write.project, installationID: installationID, customID: target, at: write.time)
        if current?.customID == target { return }
        if let previous = current?.customID {
            emit(.installDetach, suffix: "detach", key: ProfileKey.profile(write.project, previous), customID: previous)
            return
        }
        let home = write.homeKey
        let row = try Installations.row(db, key: home, installationID: installationID)
        var fields = [JSONMember("installation", row.map(Installations.json) ?? .null)]
        if merge, let history = try ProfileEdits.history(db, key: home) { fields.append(JSONMember("merge", history)) }
        emit(.installMove, suffix: "move", key: targetKey, customID: target, fields: fields)
        // Merged or not, the anonymous profile is done: its history is either in the profile now or orphaned (Braze's
        // rule), and the installation's state travels with the move.
        if try ProfileEdits.delete(db, key: home) {
            outputs.append(PendingOutput(topic: HeraldTopic.contacts.name, key: home, value: nil))
        }
    }

    /// An installation's state arriving: merged into the row here (values already here are newer), with the anonymous
    /// history if it merges; its token is claimed for this profile.
    mutating func receiveInstallation() throws {
        let write = self.write
        guard let installationID = write.installationID else { return }
        let key = write.profileKey
        try ProfileEdits.ensureProfile(db, key: key, project: write.project, customID: write.customID, at: write.receivedAt)
        if case .object(let state)? = write["installation"] {
            try Installations.receive(db, key: key, project: write.project, installationID: installationID, state: state)
            let row = try Installations.row(db, key: key, installationID: installationID)
            if let token = row?["token"] as String? {
                try Installations.log(
                    db, key: key, installationID: installationID, at: write.time, change: "moved_in", token: token)
                claim(token: token, key: key, registeredAt: row?["token_updated_at"] as String? ?? write.time)
            }
            contactsChanged(key)
        }
        if let history = write["merge"] { try ProfileEdits.merge(db, key: key, history: history) }
    }
}
