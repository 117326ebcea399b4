import Foundation
import GRDB
import PartitionStore
import Shared

/// A push token belongs to one installation at a time. Its *key* `<project>/token/<token>` keeps the owner
/// (`token_owners`); an installation that registers the token claims it there (`token_claim`), and the previous owner,
/// if another, releases it (`token_release`).
struct TokenClaims {
    let db: Database
    let write: Write

    /// A push token for the installation: the latest one replaces the previous; it is claimed for this profile at the
    /// token's key, which takes it from any other installation or profile that had it.
    func register(_ effects: inout WriteEffects) throws {
        guard let installationID = write.installationID, case .string(let token)? = write["push"]?["token"],
            case .string(let environment)? = write["push"]?["environment"]
        else { return }
        let key = write.profileKey
        let table = InstallationsTable(db)
        let old = try table.row(key, installationID)
        guard old?["token"] as String? != token || old?["environment"] as String? != environment else { return }
        try table.setToken(key, installationID, token: token, environment: environment, at: write.time)
        effects.contactChanged(key)
        guard old?["token"] as String? != token else { return }
        try PushChangelogTable(db).log(key, installationID: installationID, at: write.time, change: "registered", token: token)
        claim(token: token, key: key, registeredAt: write.time, &effects)
    }

    /// Asks the token's key to record this profile and installation as the token's owner.
    func claim(token: String, key: String, registeredAt: String, _ effects: inout WriteEffects) {
        effects.emit(
            .tokenClaim, suffix: "claim", key: ProfileKey.token(write.project, token),
            fields: [
                JSONMember("token", .string(token)), JSONMember("owner_key", .string(key)),
                JSONMember("registered_at", .string(registeredAt)),
            ])
    }

    /// At a token's key: the token now belongs to the claiming profile and installation. The previous owner, if
    /// another, releases it. A token registered on another installation later than this claim's registration wins:
    /// the claim is refused and the claimant releases the token instead. (The same installation claiming from another
    /// profile is the installation moving: its links decided where it is.)
    func applyClaim(_ effects: inout WriteEffects) throws {
        guard case .string(let token)? = write["token"], case .string(let owner)? = write["owner_key"],
            let installationID = write.installationID
        else { return }
        let registeredAt = write["registered_at"]?.stringValue ?? write.time
        let owners = TokenOwnersTable(db)
        let current = try owners.owner(project: write.project, token: token)
        if let current, current.profileKey == owner, current.installationID == installationID { return }
        if let current, current.installationID != installationID, current.since > registeredAt {
            effects.emit(
                .tokenRelease, suffix: "release", key: owner, installationID: installationID,
                fields: [JSONMember("token", .string(token)), JSONMember("moved_to", .string(current.profileKey))])
            return
        }
        try owners.set(
            project: write.project, token: token, TokenOwner(profileKey: owner, installationID: installationID, since: registeredAt))
        if let current {
            effects.emit(
                .tokenRelease, suffix: "release", key: current.profileKey, installationID: current.installationID,
                fields: [JSONMember("token", .string(token)), JSONMember("moved_to", .string(owner))])
        }
    }

    /// At the token's previous owner: the installation that still has the token loses it; the move is recorded.
    func applyRelease(_ effects: inout WriteEffects) throws {
        guard case .string(let token)? = write["token"], let installationID = write.installationID else { return }
        let key = write.record.keyString ?? ""
        let movedTo = write["moved_to"]?.stringValue
        if try InstallationWrites.removeToken(
            db, key: key, installationID: installationID, token: token, at: write.time, change: "moved_out",
            detail: movedTo.map { "to \($0)" })
        {
            effects.contactChanged(key)
        }
    }
}
