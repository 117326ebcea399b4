import Foundation
import GRDB
import Metrics
import PartitionStore
import Shared

/// Applies a write where `WriteRouter` placed it: the one switch from each op of `herald.ingest` to the stage that
/// applies it (profile edits, installations, identity moves, alias and token claims, transactional pushes). A new op is
/// a case of `IngestOp` and a branch here.
struct OpApplier {
    let db: Database
    let write: Write
    /// The configuration (segments and campaigns aside, the apps' push categories and the projects' array limits).
    let config: HeraldConfiguration

    /// Writes in Braze's "update only" mode dropped because their profile did not exist.
    static let updateOnlyDropped = Counter(label: "herald_update_only_dropped_total")

    private var identity: IdentityMoves { IdentityMoves(db: db, write: write) }

    func apply(_ plan: Route.Plan, _ effects: inout WriteEffects) throws {
        switch plan {
        case .op(let attach, let optedOut):
            guard try !skipsMissingProfile() else { return }
            if attach {
                try identity.attach(&effects)
                effects.changed([.everything])
            }
            try applyOp(optedOut: optedOut, &effects)
        case .logoutAtHome:
            try identity.logout(&effects)
            effects.changed([.everything])
        case .wipeAtHome:
            try identity.wipeAtHome(from: nil, &effects)
            effects.changed([.everything])
        case .wipeAtProfile:
            try identity.wipeAtProfile(&effects)
            effects.changed([.everything])
        case .internalRecord:
            try applyInternal(&effects)
            // Identity moves change many fields of the profiles involved: every segment is evaluated again.
            effects.changed([.everything], at: write.recordKey)
        case .transactionalPush(let key):
            effects.output(try TransactionalPushes(db: db, write: write, config: config).sendRequest(key: key))
        case .aliasOnlyProfile(let held):
            if !held { try touch(&effects) }
        case .aliasClaim:
            if let alias = write.alias { try AliasClaims(db: db, write: write).claim(alias, &effects) }
        }
    }

    /// Braze's "update only" mode: a write flagged `update_existing_only` for a profile that does not exist is dropped
    /// (counted), never creating it.
    private func skipsMissingProfile() throws -> Bool {
        guard write.updateExistingOnly, try !ProfileEdits(db).exists(write.profileKey) else { return false }
        Self.updateOnlyDropped.increment()
        return true
    }

    /// A client's op at `write.profileKey`; `optedOut`: the installation's opt-out when the router read it already.
    private func applyOp(optedOut known: Bool?, _ effects: inout WriteEffects) throws {
        let write = self.write
        let key = write.profileKey
        if write.isApp, let installationID = write.installationID, write.op != .optIn, write.op != .optOut,
            write.op != .identify, try known ?? InstallationsTable(db).optedOut(key, installationID) ?? false
        {
            // The SDK sends nothing while opted out; what it sent before and arrives now is dropped (Batch: "data
            // generated while opted out WILL be lost").
            return
        }
        let installation = InstallationWrites(db: db, write: write)
        switch write.op {
        case .identify:
            try identity.attach(&effects)
            effects.changed([.everything])
        case .profileUpdate:
            try touch(&effects)
            let edits = ProfileEdits(db)
            if let profile = write["profile"] {
                let limits = config.projects[write.project]?.arrayLimits ?? [:]
                if try edits.applyProfile(key, profile: profile, at: write.receivedAt, arrayLimits: limits) {
                    effects.contactChanged(key)
                }
                effects.changed(ProfileEdits.changeKeys(profile))
            }
            if case .array(let events)? = write["events"] {
                for (index, event) in events.enumerated() {
                    try edits.applyEvent(key, event: event, receivedAt: write.receivedAt)
                    effects.eventApplied(event, index: index)
                }
            }
        case .event:
            try touch(&effects)
            if let event = write["event"] {
                try ProfileEdits(db).applyEvent(key, event: event, receivedAt: write.receivedAt)
                effects.eventApplied(event, index: nil)
            }
        case .purchase:
            try touch(&effects)
            if let purchase = write["purchase"] {
                effects.eventApplied(try Purchases(db).apply(key, purchase: purchase, receivedAt: write.receivedAt), index: nil)
            }
        case .campaignTrigger:
            if let campaign = write["campaign"]?.stringValue {
                effects.apiTriggered(
                    key: key, campaign: campaign,
                    TriggerContext(
                        type: "api", eventID: write.id, occurrence: "api \(write.id)", at: write.receivedAt,
                        properties: write["trigger_properties"], requestID: write.requestID))
            }
        case .installation:
            try touch(&effects)
            if let fields = write["installation"], try installation.applyFields(fields) { effects.contactChanged(key) }
        case .pushToken:
            try touch(&effects)
            try TokenClaims(db: db, write: write).register(&effects)
        case .location:
            try touch(&effects)
            if let location = write["location"] { try installation.applyLocation(location) }
        case .optOut, .optIn:
            try touch(&effects)
            if try installation.setOptedOut(write.op == .optOut) { effects.contactChanged(key) }
        case .profileDelete:
            try identity.deleteProfile(&effects)
            effects.changed([.everything])
        case .alias:
            // A client's alias at its home without a custom ID: routed as `.aliasOnlyProfile` (nothing here).
            break
        case .logout, .wipe, .pushSend:
            break  // routed to their own plans
        case .installLink, .installUnlink, .installDetach, .installMove, .installDrop, .tokenClaim, .tokenRelease,
            .aliasClaim, .aliasRefused, .aliasUnlink, .aliasMove:
            break  // the orchestrator's own: `.internalRecord`
        }
    }

    /// The orchestrator's own records (source `orchestrator`).
    private func applyInternal(_ effects: inout WriteEffects) throws {
        switch write.op {
        case .installLink:
            guard let target = write["target_custom_id"]?.stringValue else { return }
            try identity.link(to: target, merge: write["merge"] == .bool(true), &effects)
        case .installUnlink: try identity.unlink(from: write["target_custom_id"]?.stringValue)
        case .installDetach: try identity.detach(&effects)
        case .installMove: try identity.receive(&effects)
        case .installDrop: try identity.drop(&effects)
        case .wipe: try identity.wipeAtHome(from: write["from_custom_id"]?.stringValue, &effects)
        case .tokenClaim: try TokenClaims(db: db, write: write).applyClaim(&effects)
        case .tokenRelease: try TokenClaims(db: db, write: write).applyRelease(&effects)
        case .aliasClaim, .aliasRefused, .aliasUnlink, .aliasMove: try AliasClaims(db: db, write: write).apply(&effects)
        default:
            effects.output(OrchestratorApplier.deadLetter(write.record, reason: "\(write.op.rawValue) is not an orchestrator op"))
        }
    }

    /// The profile row, and for an app write the installation's row in it (first and last seen).
    private func touch(_ effects: inout WriteEffects) throws {
        let write = self.write
        if try ProfileEdits(db).ensureProfile(write.profileKey, project: write.project, customID: write.customID, at: write.receivedAt) {
            effects.changed([.native("created_at"), .native("timezone")])
        }
        if write.isApp {
            try InstallationWrites(db: db, write: write).touch(at: write.profileKey)
            effects.changed([.native("last_visit_date"), .native("install_date")])
        }
        if [.installation, .pushToken, .location, .optIn, .optOut].contains(write.op) {
            effects.changed([.namespace(.native), .namespace(.push)])
        }
    }
}
