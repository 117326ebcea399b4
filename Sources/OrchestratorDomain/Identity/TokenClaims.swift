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
    func register(_ registration: PushTokenRegistration, _ effects: inout WriteEffects) throws {
        guard let installationID = write.installationID else { return }
        let (token, environment) = (registration.token, registration.environment)
        let key = write.profileKey
        let table = InstallationsTable(db)
        let old = try table.record(key, installationID)
        guard old?.token != token || old?.environment != environment else { return }
        try table.setToken(key, installationID, token: token, environment: environment, at: write.receivedAt)
        effects.contactChanged(key)
        guard old?.token != token else { return }
        try PushChangelogTable(db).log(key, installationID: installationID, at: write.receivedAt, change: "registered", token: token)
        claim(token: token, key: key, registeredAt: write.receivedAt, &effects)
    }

    /// Asks the token's key to record this profile and installation as the token's owner.
    func claim(token: String, key: String, registeredAt: Date, _ effects: inout WriteEffects) {
        effects.emit(
            .tokenClaim(TokenClaim(token: token, ownerKey: key, registeredAt: registeredAt)), suffix: "claim",
            key: ProfileKey.token(write.project, token))
    }

    /// At a token's key: the token now belongs to the claiming profile and installation. The previous owner, if
    /// another, releases it. A token registered on another installation later than this claim's registration wins:
    /// the claim is refused and the claimant releases the token instead. (The same installation claiming from another
    /// profile is the installation moving: its links decided where it is.)
    func applyClaim(_ claim: TokenClaim, _ effects: inout WriteEffects) throws {
        guard let installationID = write.installationID else { return }
        let (token, owner) = (claim.token, claim.ownerKey)
        let registeredAt = claim.registeredAt ?? write.receivedAt
        let owners = TokenOwnersTable(db)
        let current = try owners.owner(project: write.project, token: token)
        if let current, current.profileKey == owner, current.installationID == installationID { return }
        if let current, current.installationID != installationID, current.since > registeredAt {
            effects.emit(
                .tokenRelease(TokenRelease(token: token, movedTo: current.profileKey)), suffix: "release", key: owner,
                installationID: installationID)
            return
        }
        try owners.set(
            project: write.project, token: token, TokenOwner(profileKey: owner, installationID: installationID, since: registeredAt))
        if let current {
            effects.emit(
                .tokenRelease(TokenRelease(token: token, movedTo: owner)), suffix: "release", key: current.profileKey,
                installationID: current.installationID)
        }
    }

    /// At the token's previous owner: the installation that still has the token loses it; the move is recorded. At the
    /// token's own key, from an erased profile: the key forgets that owner, and the ids of the writes it applied, which
    /// name the token.
    func applyRelease(_ release: TokenRelease, _ effects: inout WriteEffects) throws {
        let key = write.record.keyString ?? ""
        if let erased = release.erasedOwner, key == ProfileKey.token(write.project, release.token) {
            _ = try TokenOwnersTable(db).forget(project: write.project, token: release.token, owner: erased)
            try RecordDedupe.forget(db, scope: write.project, prefix: "\(key) ")
            return
        }
        guard let installationID = write.installationID else { return }
        if try InstallationWrites.removeToken(
            db, key: key, installationID: installationID, token: release.token, at: write.receivedAt, change: "moved_out",
            detail: release.movedTo.map { "to \($0)" })
        {
            effects.contactChanged(key)
        }
    }
}
