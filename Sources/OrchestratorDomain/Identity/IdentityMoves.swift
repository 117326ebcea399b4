import Foundation
import GRDB
import Metrics
import PartitionStore
import Shared

/// Installations moving between profiles (docs/orchestrator.md, Identity). An installation's *home key*
/// `<project>/install/<id>` holds its link to a profile and, while it is anonymous, its state and anonymous history.
/// Once linked, the installation's state lives with the profile. Every move goes through the home, whose records to
/// any one key are produced in order:
///
/// - at the profile: `attach` (identify, or an app write naming its user) asks the home to link (`install_link`);
/// - at the home: the link moves; the previous holder gives the installation back (`install_detach`), or the home
///   sends its anonymous state and history (`install_move`);
/// - logout and wipe at the home, wipe and delete at the profile.
struct IdentityMoves {
    let db: Database
    let write: Write

    // MARK: At the profile

    /// Joins the write's installation to its profile: a placeholder row here at once, and a link request to the
    /// installation's home, which moves the installation's state here. The anonymous history merges only if the custom
    /// ID had no profile yet (braze-rules §1.2: "only happens once").
    func attach(_ effects: inout WriteEffects) throws {
        guard let customID = write.customID, let installationID = write.installationID else { return }
        let key = write.profileKey
        let profiles = ProfileEdits(db)
        let existed = try profiles.exists(key)
        try profiles.ensureProfile(key, project: write.project, customID: customID, at: write.receivedAt)
        try InstallationWrites(db: db, write: write).touch(at: key)
        effects.emit(
            .installLink(InstallLink(targetCustomID: customID, merge: !existed)), suffix: "link", key: write.homeKey,
            installationID: installationID)
    }

    /// Wipe named by an identified app: the installation leaves the profile at once; its home forgets the link and the
    /// anonymous data.
    func wipeAtProfile(_ effects: inout WriteEffects) throws {
        guard let customID = write.customID, let installationID = write.installationID else { return }
        if try InstallationsTable(db).delete(write.profileKey, installationID) { effects.contactChanged(write.profileKey) }
        effects.emit(.wipe(fromCustomID: customID), suffix: "home", key: write.homeKey)
    }

    /// Delete (an erasure, docs/data-rights.md): the profile and every row of every table keyed by it go (the segment
    /// memberships through the exits the write's evaluation makes); each of its installations' homes forgets the link,
    /// each of its aliases is free again. With `doNotContact`, its email address and phone number go on the project's
    /// suppression list. Answers with this partition's part of the receipt (`herald.erasures`), and the contact
    /// tombstone names the erasure, so that the notifier erases its stores and writes its part.
    func deleteProfile(doNotContact: Bool, _ effects: inout WriteEffects) throws {
        let key = write.profileKey
        var removed = try ProfileRows.count(db, key: key)
        var suppressed: [SuppressionEntry] = []
        if doNotContact, let profile = try ProfilesTable(db).record(key) {
            for (channel, address) in [(MessageChannel.email, profile.email), (.sms, profile.phoneNumber)] {
                guard let address, !address.isEmpty else { continue }
                suppressed.append(SuppressionEntry(
                    project: write.project, channel: channel, address: address, reason: "erased", by: "orchestrator", at: write.receivedAt))
            }
        }
        let installations = InstallationsTable(db)
        for installationID in try installations.ids(key) {
            effects.emit(
                .installUnlink(targetCustomID: write.customID), suffix: "unlink \(installationID)",
                key: ProfileKey.home(write.project, installationID), installationID: installationID)
            // Its token's key forgets this owner (the token stays the device's).
            if let token = try installations.record(key, installationID)?.token {
                effects.emit(
                    .tokenRelease(TokenRelease(token: token, movedTo: nil, erasedOwner: key)), suffix: "forget \(installationID)",
                    key: ProfileKey.token(write.project, token), installationID: installationID)
            }
        }
        try AliasClaims(db: db, write: write).unlinkAliases(of: key, &effects)
        _ = try ProfileEdits(db).delete(key)
        // What no cascade reached (timers, the frequency log, receipts of pushes…): every table keyed by profile.
        try ProfileRows.delete(db, key: key, keeping: ["segment_members"])
        // The ids of its writes name it (`<profile key> <id>`): forgotten too. A client that sends one of them again
        // after the erasure writes a new profile, as any new write would.
        let dedupe = try RecordDedupe.forget(db, scope: write.project, prefix: "\(key) ")
        if dedupe > 0 { removed["applied_records"] = dedupe }
        for entry in suppressed {
            effects.output(PendingOutput(topic: HeraldTopic.suppressions.name, key: entry.key, value: try Wire.encode(entry)))
        }
        effects.output(PendingOutput(
            topic: HeraldTopic.contacts.name, key: key, value: nil,
            headers: [KafkaHeader(ErasureReceipt.header, Array(write.id.utf8))]))
        let receipt = ErasureReceipt(
            erasure: write.id, project: write.project, profileKey: key, service: "orchestrator", removed: removed,
            tombstones: [HeraldTopic.contacts.name: 1, HeraldTopic.stateOrchestrator.name: removed.values.reduce(0, +)],
            suppressed: suppressed.map { "\($0.channel.rawValue) \($0.hint)" }, at: write.receivedAt)
        effects.output(PendingOutput(topic: HeraldTopic.erasures.name, key: key, value: try Wire.encode(receipt)))
        Self.erasures.increment()
    }

    /// `herald_erasures_total`: profiles erased (deletes applied), every way they came.
    static let erasures = Counter(label: "herald_erasures_total")

    // MARK: At the installation's home

    /// Logout: the link goes; the profile gives the installation back (it becomes anonymous again, here).
    func logout(_ effects: inout WriteEffects) throws {
        let links = InstallationLinksTable(db)
        guard let installationID = write.installationID else { return }
        let link = try links.link(project: write.project, installationID: installationID)
        // A late logout does not undo a later login.
        if let link, write.receivedAt < link.linkedAt { return }
        guard let customID = link?.customID else {
            // Not linked yet: the logout is remembered at its time, so that the identification it undoes, still on its
            // way here from its profile's partition, arrives stale and is refused (the device would otherwise stay with
            // that user, and the next user's identify be refused).
            try links.setLink(project: write.project, installationID: installationID, customID: nil, at: write.receivedAt)
            return
        }
        // A logout that names its profile (signed identity) undoes only a link to that profile: another user's proof
        // cannot log this device out, and a late logout does not undo a later login.
        if case .logout(let from?) = write.payload, from != customID { return }
        try links.setLink(project: write.project, installationID: installationID, customID: nil, at: write.receivedAt)
        effects.emit(.installDetach, suffix: "detach", key: ProfileKey.profile(write.project, customID), customID: customID)
    }

    /// Wipe at the home: the link and the anonymous data go; a profile that still holds the installation (other than
    /// the one that already dropped it) drops it.
    func wipeAtHome(from: String?, _ effects: inout WriteEffects) throws {
        guard let installationID = write.installationID else { return }
        let links = InstallationLinksTable(db)
        let link = try links.link(project: write.project, installationID: installationID)
        try links.delete(project: write.project, installationID: installationID)
        if let customID = link?.customID, customID != from {
            effects.emit(.installDrop, suffix: "drop", key: ProfileKey.profile(write.project, customID), customID: customID)
        }
        if try ProfileEdits(db).delete(write.homeKey) { effects.contactGone(write.homeKey) }
    }

    /// At the home: the installation now belongs to `target`. A link older than the current one is refused (its
    /// profile gives the installation back). A device that belongs to another user stays theirs: it moves only once that
    /// user logs it out (with their proof), so that one's own proof never takes someone else's device, its token and
    /// its notifications; the target profile forgets the installation without moving anything (what it wrote there is
    /// its own), and the refusal is dead-lettered. An anonymous installation's home sends its state (and, on a first
    /// identification, the anonymous history) and forgets the anonymous profile.
    func link(_ link: InstallLink, _ effects: inout WriteEffects) throws {
        guard let installationID = write.installationID else { return }
        let target = link.targetCustomID
        let links = InstallationLinksTable(db)
        let current = try links.link(project: write.project, installationID: installationID)
        let targetKey = ProfileKey.profile(write.project, target)
        if let current, current.linkedAt > write.receivedAt {
            if current.customID != target {
                effects.emit(.installDetach, suffix: "stale", key: targetKey, customID: target)
            }
            return
        }
        if let holder = current?.customID, holder != target {
            effects.emit(.installDrop, suffix: "refused", key: targetKey, customID: target)
            effects.output(OrchestratorApplier.deadLetter(
                write.record,
                reason: "installation_held_by_another_user: the installation belongs to another user; it moves to \(target) only once that user logs it out (POST /v1/app/identify with custom_id null, from_custom_id and their X-CustomID-Auth)"))
            Counter(label: "herald_installation_moves_refused_total").increment()
            return
        }
        try links.setLink(project: write.project, installationID: installationID, customID: target, at: write.receivedAt)
        if current?.customID == target { return }
        let home = write.homeKey
        let state = try InstallationsTable(db).movingState(home, installationID)
        let history = link.merge ? try ProfileHistory(db).history(home) : nil
        effects.emit(
            .installMove(InstallMove(installation: state, merge: history)), suffix: "move",
            key: targetKey, customID: target)
        // Merged or not, the anonymous profile is done: its history is either in the profile now or orphaned (Braze's
        // rule), and the installation's state travels with the move.
        if try ProfileEdits(db).delete(home) { effects.contactGone(home) }
    }

    /// At the home: a deleted profile's link is forgotten.
    func unlink(from target: String?) throws {
        guard let installationID = write.installationID else { return }
        let links = InstallationLinksTable(db)
        if let link = try links.link(project: write.project, installationID: installationID), link.customID != nil,
            link.customID == target
        {
            try links.setLink(project: write.project, installationID: installationID, customID: nil, at: write.receivedAt)
        }
    }

    // MARK: At the profile, from the home

    /// Gives the installation back to its home, which sends it where its link now points.
    func detach(_ effects: inout WriteEffects) throws {
        guard let installationID = write.installationID else { return }
        let key = write.profileKey
        let table = InstallationsTable(db)
        guard let (installation, state) = try table.leaving(key, installationID) else { return }
        _ = try table.delete(key, installationID)
        try PushChangelogTable(db).log(key, installationID: installationID, at: write.receivedAt, change: "detached", token: installation.token)
        effects.contactChanged(key)
        effects.emit(.installMove(InstallMove(installation: state)), suffix: "move", key: write.homeKey)
    }

    /// An installation's state arriving: merged into the row here (values already here are newer), with the anonymous
    /// history if it merges; its token is claimed for this profile.
    func receive(_ move: InstallMove, _ effects: inout WriteEffects) throws {
        guard let installationID = write.installationID else { return }
        let key = write.profileKey
        try ProfileEdits(db).ensureProfile(key, project: write.project, customID: write.customID, at: write.receivedAt)
        if let state = move.installation {
            let table = InstallationsTable(db)
            try table.receive(key, project: write.project, installationID: installationID, state: state)
            if let installation = try table.record(key, installationID), let token = installation.token {
                try PushChangelogTable(db).log(key, installationID: installationID, at: write.receivedAt, change: "moved_in", token: token)
                TokenClaims(db: db, write: write).claim(
                    token: token, key: key, registeredAt: installation.tokenUpdatedAt ?? write.receivedAt, &effects)
            }
            effects.contactChanged(key)
        }
        if let history = move.merge { try ProfileHistory(db).merge(key, history) }
    }

    /// The installation was wiped: the profile forgets it without moving it.
    func drop(_ effects: inout WriteEffects) throws {
        guard let installationID = write.installationID else { return }
        if try InstallationsTable(db).delete(write.profileKey, installationID) { effects.contactChanged(write.profileKey) }
    }
}
