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
/// - writes that name the alias reach the home and are forwarded to the profile holding it (`WriteRouter`);
/// - a profile that gives the alias up (another name for the label, or deleted) unlinks it (`alias_unlink`).
struct AliasClaims {
    let db: Database
    let write: Write

    /// At the profile: the alias is this profile's (replacing another name of its label), claimed at the alias's home.
    func claim(_ alias: UserAlias, _ effects: inout WriteEffects) throws {
        guard let customID = write.customID else { return }
        let key = write.profileKey
        let profiles = ProfileEdits(db)
        let existed = try profiles.exists(key)
        if try profiles.ensureProfile(key, project: write.project, customID: customID, at: write.receivedAt) {
            effects.changed([.native("created_at"), .native("timezone")])
        }
        let aliases = ProfileAliasesTable(db)
        let current = try aliases.name(key, label: alias.label)
        guard current != alias.name else { return }
        if let current {
            let previous = UserAlias(label: alias.label, name: current)
            effects.emit(
                .aliasUnlink(targetCustomID: customID), suffix: "unlink", key: ProfileKey.alias(write.project, previous),
                alias: previous)
        }
        try aliases.set(key, alias, since: write.receivedAt)
        effects.emit(
            .aliasClaim(AliasClaim(targetCustomID: customID, merge: !existed)), suffix: "claim",
            key: ProfileKey.alias(write.project, alias), alias: alias)
    }

    /// The orchestrator's alias records: a claim at the home, a refusal, an unlink, an alias-only profile's history.
    func apply(_ effects: inout WriteEffects) throws {
        guard let alias = write.alias else { return }
        switch write.payload {
        case .aliasClaim(let claim):
            let target = claim.targetCustomID
            let targetKey = ProfileKey.profile(write.project, target)
            let links = AliasLinksTable(db)
            if let holder = try links.holder(project: write.project, alias) {
                if holder != target {
                    effects.emit(.aliasRefused, suffix: "refused", key: targetKey, customID: target, alias: alias)
                }
                return
            }
            try links.set(project: write.project, alias, customID: target, at: write.receivedAt)
            let home = write.profileKey
            let profiles = ProfileEdits(db)
            guard try profiles.exists(home) else { return }
            if claim.merge, let history = try ProfileHistory(db).history(home) {
                effects.emit(.aliasMove(merge: history), suffix: "move", key: targetKey, customID: target, alias: alias)
            }
            // Merged or not, the alias-only profile is done (braze-rules §1.2: its history is in the profile now, or
            // orphaned).
            if try profiles.delete(home) { effects.contactGone(home) }
        case .aliasRefused:
            try ProfileAliasesTable(db).delete(write.profileKey, alias)
        case .aliasUnlink(let target):
            try AliasLinksTable(db).remove(project: write.project, alias, customID: target)
        case .aliasMove(let history):
            let key = write.profileKey
            try ProfileEdits(db).ensureProfile(key, project: write.project, customID: write.customID, at: write.receivedAt)
            if let history { try ProfileHistory(db).merge(key, history) }
            effects.contactChanged(key)
        default:
            break
        }
    }

    /// A deleted profile's aliases are free again.
    func unlinkAliases(of key: String, _ effects: inout WriteEffects) throws {
        guard let customID = write.customID else { return }
        for alias in try ProfileAliasesTable(db).aliases(key) {
            effects.emit(
                .aliasUnlink(targetCustomID: customID), suffix: "unlink \(alias.label)", key: ProfileKey.alias(write.project, alias),
                alias: alias)
        }
    }
}
