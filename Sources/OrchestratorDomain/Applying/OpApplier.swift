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
    private var caps: ProfileCaps { ProfileCaps(db: db, limits: config.projects[write.project]?.profileLimits ?? ProfileLimits()) }

    func apply(_ plan: Route.Plan, _ effects: inout WriteEffects) throws {
        switch plan {
        case .op(let attach, let optedOut):
            guard try !skipsMissingProfile() else { return }
            if attach {
                guard try admitsInstallation(&effects) else { return }
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
            // Identity moves change many fields of the profiles involved: every segment is evaluated again (a
            // journey's update says what it changed).
            if write.op != .journeyUpdate { effects.changed([.everything], at: write.recordKey) }
        case .transactionalPush(let key):
            guard case .pushSend(let push) = write.payload else { return }
            effects.output(try TransactionalPushes(db: db, write: write, config: config).sendRequest(push, key: key))
        case .aliasOnlyProfile(let held):
            if !held { try touch(&effects) }
        case .aliasClaim:
            if let alias = write.alias { try AliasClaims(db: db, write: write).claim(alias, &effects) }
        }
    }

    /// Whether the write's installation may join its profile (`profile_limits.installations`); else the write is
    /// refused whole, with a dead letter.
    private func admitsInstallation(_ effects: inout WriteEffects) throws -> Bool {
        guard let installationID = write.installationID else { return true }
        guard try caps.admitsInstallation(installationID, key: write.profileKey) else {
            effects.output(caps.refusal(write, .installations, [installationID]))
            return false
        }
        return true
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
        switch write.payload {
        case .identify:
            guard try admitsInstallation(&effects) else { return }
            try identity.attach(&effects)
            effects.changed([.everything])
        case .profileUpdate(let update):
            try touch(&effects)
            let edits = ProfileEdits(db)
            if let profile = update.profile { try applyEdit(profile, key: key, &effects) }
            var refusedEvents: [String] = []
            for (index, event) in (update.events ?? []).enumerated() {
                guard try caps.admitsEvent(event.name, key: key) else {
                    refusedEvents.append(event.name)
                    continue
                }
                let attributes = try edits.applyEvent(key, event, receivedAt: write.receivedAt)
                effects.eventApplied(name: event.name, attributes: attributes, label: event.label, index: index)
            }
            if !refusedEvents.isEmpty { effects.output(caps.refusal(write, .eventNames, refusedEvents)) }
        case .event(let event):
            guard try caps.admitsEvent(event.name, key: key) else { return effects.output(caps.refusal(write, .eventNames, [event.name])) }
            try touch(&effects)
            let attributes = try ProfileEdits(db).applyEvent(key, event, receivedAt: write.receivedAt)
            effects.eventApplied(name: event.name, attributes: attributes, label: event.label, index: nil)
        case .purchase(let purchase):
            guard try caps.admitsProduct(purchase.productID, key: key) else {
                return effects.output(caps.refusal(write, .productIDs, [purchase.productID]))
            }
            try touch(&effects)
            let attributes = try Purchases(db).apply(key, purchase, receivedAt: write.receivedAt)
            effects.eventApplied(name: Purchases.eventName, attributes: attributes, label: nil, index: nil, revenueUSD: purchase.revenueUSD)
        case .campaignTrigger(let trigger):
            effects.apiTriggered(
                key: key, .campaign(trigger.campaign),
                TriggerContext(
                    type: .api, eventID: write.id, occurrence: "api \(write.id)", at: write.receivedAt,
                    properties: .object(trigger.properties), requestID: write.requestID))
        case .journeyTrigger(let trigger):
            effects.apiTriggered(
                key: key, .journey(trigger.journey),
                TriggerContext(
                    type: .api, eventID: write.id, occurrence: "api \(write.id)", at: write.receivedAt,
                    properties: .object(trigger.properties), requestID: write.requestID))
        case .installation(let report):
            try touch(&effects)
            if try installation.applyFields(report) { effects.contactChanged(key) }
        case .pushToken(let registration):
            try touch(&effects)
            try TokenClaims(db: db, write: write).register(registration, &effects)
            if let installationID = write.installationID {
                try UninstallTracking(db: db, config: config).tokenRegistered(key: key, installationID: installationID, at: write.receivedAt)
            }
        case .location(let location):
            try touch(&effects)
            let geofences = GeofenceUpdates(db: db, write: write, config: config)
            let before = try geofences.given()
            if try installation.applyLocation(location) {
                effects.changed([.namespace(.location)])
                for event in try geofences.located(before: before, at: location.time ?? write.receivedAt, &effects) {
                    try applyGeofenceEvent(event, &effects)
                }
            }
        case .session(let session):
            try touch(&effects)
            try AppSessions(db: db, write: write).apply(session, &effects)
        case .pushOpen(let open):
            try touch(&effects)
            try PushOpens(db: db, write: write, config: config).apply(open, &effects)
        case .geofence(let report):
            try touch(&effects)
            guard let event = try GeofenceReports(db: db, write: write, config: config).event(report) else { return }
            try applyGeofenceEvent(event, &effects)
        case .inApp(let report):
            try touch(&effects)
            try InAppReports(db: db, write: write, config: config).apply(report, &effects)
        case .contentCard(let report):
            try touch(&effects)
            try ContentCardReports(db: db, write: write, config: config).apply(report, &effects)
        case .optOut, .optIn:
            try touch(&effects)
            if try installation.setOptedOut(write.op == .optOut) { effects.contactChanged(key) }
        case .profileDelete(let doNotContact):
            try identity.deleteProfile(doNotContact: doNotContact, &effects)
            effects.changed([.everything])
        case .alias:
            // A client's alias at its home without a custom ID: routed as `.aliasOnlyProfile` (nothing here).
            break
        case .logout, .wipe, .pushSend:
            break  // routed to their own plans
        case .installLink, .installUnlink, .installDetach, .installMove, .installDrop, .tokenClaim, .tokenRelease,
            .aliasClaim, .aliasRefused, .aliasUnlink, .aliasMove, .journeyUpdate:
            break  // the orchestrator's own: `.internalRecord`
        }
    }

    /// A profile edit at `key`, within the profile's limits (what they refuse is reported); its contact snapshot if
    /// its reachability changed.
    private func applyEdit(_ edit: ProfileEdit, key: String, _ effects: inout WriteEffects) throws {
        let (admitted, refused) = try caps.admit(edit, key: key)
        if !refused.isEmpty { effects.output(caps.refusal(write, .attributes, refused)) }
        let limits = config.projects[write.project]?.arrayLimits ?? [:]
        if try ProfileEdits(db).applyProfile(key, admitted, at: write.receivedAt, arrayLimits: limits) { effects.contactChanged(key) }
        effects.changed(ProfileEdits.changeKeys(admitted), at: key)
    }

    /// The orchestrator's own records (source `orchestrator`).
    private func applyInternal(_ effects: inout WriteEffects) throws {
        switch write.payload {
        case .installLink(let link): try identity.link(link, &effects)
        case .installUnlink(let target): try identity.unlink(from: target)
        case .installDetach: try identity.detach(&effects)
        case .installMove(let move): try identity.receive(move, &effects)
        case .installDrop: try identity.drop(&effects)
        case .wipe(let from): try identity.wipeAtHome(from: from, &effects)
        case .tokenClaim(let claim): try TokenClaims(db: db, write: write).applyClaim(claim, &effects)
        case .tokenRelease(let release): try TokenClaims(db: db, write: write).applyRelease(release, &effects)
        case .aliasClaim, .aliasRefused, .aliasUnlink, .aliasMove: try AliasClaims(db: db, write: write).apply(&effects)
        case .journeyUpdate(let update):
            // At the profile's key; a profile erased since is not made again.
            let key = write.recordKey
            guard try ProfilesTable(db).exists(key) else { return }
            try applyEdit(update.profile, key: key, &effects)
            effects.journeyUpdated(key: key, update)
        default:
            effects.output(OrchestratorApplier.deadLetter(write.record, reason: "\(write.op.rawValue) is not an orchestrator op"))
        }
    }

    /// The profile row, and for an app write the installation's row in it (first and last seen).
    /// A geofence's entry or exit, counted (`GeofenceReports`), as the profile's event.
    private func applyGeofenceEvent(_ event: ValidatedEvent, _ effects: inout WriteEffects) throws {
        let key = write.profileKey
        guard try caps.admitsEvent(event.name, key: key) else { return effects.output(caps.refusal(write, .eventNames, [event.name])) }
        let attributes = try ProfileEdits(db).applyEvent(key, event, receivedAt: write.receivedAt)
        effects.eventApplied(name: event.name, attributes: attributes, label: nil, index: nil)
    }

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
