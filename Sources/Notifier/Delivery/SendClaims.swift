import Foundation
import GRDB
import Logging
import PartitionStore
import Shared

/// A channel's due attempts, claimed from a partition in one transaction (docs/notifier.md, "The ledger"): the due
/// ledger rows first (retries, targets an earlier fan-out left), each re-checked against the contact state of now and
/// marked `sending` if still reachable; then, while the limit has room, queued sends fanned out into ledger rows (their
/// targets as of now), inserted `sending` at once up to the limit. Suppressed and expired targets are finished here,
/// with their reports.
enum SendClaims {
    /// A ledger row claimed for an attempt.
    struct Claimed: Sendable {
        var attempt: DeliveryAttempt
        var profileKey: String
        /// The profile's contact as the claim read it: the inbox entry of a sent push names its owners from it.
        var contact: Contact?
    }

    /// How long a send that names the contact revision it was decided on waits for that snapshot (or a newer one)
    /// before it is resolved on the contact held here. The two topics are read side by side, so the wait is the
    /// consumer's lag of one behind the other: far shorter than this in any healthy state.
    static let contactRevisionWait: TimeInterval = 60
    /// A send that names no revision (from before revisions) and finds no one to reach waits this long for a newer
    /// snapshot, and only for these reasons.
    static let contactSettle: TimeInterval = 2
    /// How often a waiting send is looked at again (a snapshot of its profile releases it at once).
    static let contactRecheck: TimeInterval = 0.2
    static let waitingReasons: Set<DeliveryReason.Suppression> = [.noContact, .noInstallation, .noToken, .noAddress]
    /// Send requests as the applier decoded them when their records came, for the claim moments later (in a stream a
    /// send is claimed within a worker round or two of its arrival; a send that waited longer is decoded again).
    static let arrivedRequests = RecentDecodes<SendRequest>(capacity: 1024)
    private static let logger = Logger(label: "herald.notifier")

    /// Takes up to `limit` attempts of `channel` that are due: first the due ledger rows, each re-checked against the
    /// contact state of now and marked `sending` if still reachable; then, while the limit has room, fans out queued
    /// sends into ledger rows (their targets as of now), inserted `sending` at once up to the limit (one statement per
    /// target instead of an insert, a read and an update). Suppressed and expired rows are finished here, with their
    /// reports.
    ///
    /// Webhooks pass `gate`: a due row or a new target of a disabled endpoint is parked (with a `parked` report), and
    /// one whose endpoint has every lane taken waits `pending` (the due rows of such endpoints are not even read).
    static func claim(
        _ db: Database, channel: MessageChannel, limit: Int, now: Date, origins: [String: Eligibility.Origin],
        gate: WebhookGate? = nil, suppressions: SuppressionList? = nil
    ) throws -> (claimed: [Claimed], outputs: [PendingOutput]) {
        // Nothing is sent to an address before the suppression list is read (the service's start).
        if channel == .email || channel == .sms, suppressions?.isReady == false { return ([], []) }
        var outputs: [PendingOutput] = []
        let (sends, ledger) = (SendsTable(db), LedgerTable(db))
        try sends.releaseHeld(channel: channel, at: now)
        // Each profile's contact and local feedback, read once per claim (fan-out and due rows alike; neither changes
        // them).
        var states: [String: (contact: Contact?, feedback: LocalFeedback)] = [:]
        func state(_ key: String) throws -> (contact: Contact?, feedback: LocalFeedback) {
            if let known = states[key] { return known }
            let read = (try ContactsTable(db).contact(key), try FeedbackTable(db).feedback(key))
            states[key] = read
            return read
        }
        // Each send request decoded once per claim (a retry of several targets of one send), and not at all when the
        // applier's decoding of the same bytes is still at hand.
        var requests: [String: SendRequest] = [:]
        func request(_ sendID: String, _ bytes: [UInt8]) -> SendRequest? {
            if let known = requests[sendID] { return known }
            let decoded = arrivedRequests.value(for: sendID, bytes: bytes) ?? (try? Wire.decode(SendRequest.self, from: bytes))
            requests[sendID] = decoded
            return decoded
        }
        // Due rows first: retries, and targets an earlier fan-out left beyond its limit, so that a stream of new sends
        // never starves them.
        var claimed: [Claimed] = []
        let gate = channel == .webhook ? gate : nil
        for row in try ledger.due(channel: channel, at: now, limit: limit, excluding: gate?.saturated ?? []) {
            let (sendID, targetID, attempts) = (row.sendID, row.targetID, row.attempts)
            // A webhook's target is its endpoint, rebuilt from the send (a row another owner parked holds none).
            guard let send = request(sendID, row.request),
                var target = (try? Wire.decodeValue(DeliveryTarget.self, from: Array(row.target.utf8)))
                    ?? (gate != nil ? DeliveryTarget(id: targetID, address: "") : nil)
            else {
                try ledger.finishPending(sendID: sendID, targetID: targetID, .failed, reason: .herald(.unreadableLedgerRow), messageID: nil, at: now)
                continue
            }
            if let expires = send.expiresAt, expires <= now {
                try ledger.finishPending(sendID: sendID, targetID: targetID, .failed, reason: .herald(.expired), messageID: nil, at: now)
                outputs.append(DeliveryReports.report(send, target: target, outcome: .failed, reason: .herald(.expired), attempts: attempts, now: now))
                NotifierMetrics.outcome(channel: channel, outcome: .failed, reason: .herald(.expired))
                continue
            }
            // The state at send time wins: re-check this target now (a retry may come long after the fan-out).
            let key = send.profileKey
            let (contact, feedback) = try state(key)
            let resolution = Eligibility.resolve(send, contact: contact, feedback: feedback, origins: origins, suppressions: suppressions)
            guard let current = resolution.targets.first(where: { $0.id == targetID }) else {
                let reason = DeliveryReason.suppressed(
                    resolution.skipped.first(where: { $0.id == targetID })?.reason ?? resolution.skipped.first?.reason ?? .unreachable)
                try ledger.finishPending(sendID: sendID, targetID: targetID, .suppressed, reason: reason, messageID: nil, at: now)
                outputs.append(DeliveryReports.report(send, target: target, outcome: .suppressed, reason: reason, attempts: attempts, now: now))
                NotifierMetrics.outcome(channel: channel, outcome: .suppressed, reason: reason)
                continue
            }
            if let gate {
                if gate.isDisabled(targetID) {
                    if try ledger.park(sendID: sendID, targetID: targetID, reason: .herald(.endpointDisabled), at: now) {
                        outputs.append(DeliveryReports.report(send, target: current, outcome: .parked, reason: .herald(.endpointDisabled), attempts: attempts, now: now))
                    }
                    continue
                }
                guard gate.take(targetID, sendID: sendID) else { continue }
            }
            // A token replaced since the fan-out: the installation's new token (the badge stays the one decided then).
            let badge = target.badge
            target = current
            target.badge = badge
            try ledger.attempt(sendID: sendID, targetID: targetID, target: encode(target), at: now)
            claimed.append(Claimed(attempt: DeliveryAttempt(request: send, target: target, attempt: attempts + 1), profileKey: key, contact: contact))
        }
        // Fan-out of new sends, their targets claimed at once while the limit has room (the rest wait as `pending` rows
        // for the next claim). In arrival order (the index's rowid order); those waiting for their contact only once
        // their check is due.
        guard claimed.count < limit else { return (claimed, outputs) }
        for row in try sends.queued(channel: channel, at: now, limit: limit - claimed.count) {
            let sendID = row.sendID
            guard let send = request(sendID, row.request) else {
                try sends.resolve(sendID)
                continue
            }
            let (contact, feedback) = try state(send.profileKey)
            // The orchestrator writes a profile's contact snapshot before the sends it decides after, but on another
            // topic: the snapshot may reach this consumer a batch later. A send waits for the revision it was decided
            // on instead of being resolved on an older snapshot (which may not have its token or address yet).
            let waited = now.timeIntervalSince(row.receivedAt)
            if let needed = send.contactRevision, send.token == nil, (contact?.revision ?? 0) < needed {
                if waited < contactRevisionWait {
                    try sends.checkAgain(sendID, at: now.addingTimeInterval(contactRecheck))
                    continue
                }
                logger.warning(
                    "send resolved without the contact it was decided on",
                    metadata: [
                        "send_id": "\(sendID)", "campaign": "\(send.campaign)", "revision": "\(needed)",
                        "held_revision": "\(contact?.revision ?? 0)", "seconds": "\(Int(waited))",
                    ])
            }
            if send.contactRevision != nil, waited >= contactSettle, row.waited {
                // What the rule before revisions would have suppressed: a lag between the two topics worth knowing.
                logger.info(
                    "send waited for the contact it was decided on",
                    metadata: ["send_id": "\(sendID)", "campaign": "\(send.campaign)", "seconds": "\(String(format: "%.1f", waited))"])
            }
            let resolution = Eligibility.resolve(send, contact: contact, feedback: feedback, origins: origins, suppressions: suppressions)
            // Sends from before revisions: one that finds nobody to reach waits a moment for a newer snapshot.
            if send.contactRevision == nil, resolution.targets.isEmpty, waited < contactSettle,
                resolution.skipped.allSatisfy({ waitingReasons.contains($0.reason) })
            {
                try sends.checkAgain(sendID, at: now.addingTimeInterval(contactRecheck))
                continue
            }
            try sends.resolve(sendID)
            for skipped in resolution.skipped {
                let reason = DeliveryReason.suppressed(skipped.reason)
                _ = try insertLedger(ledger, send: send, targetID: skipped.id, target: nil, state: .suppressed, reason: reason, now: now)
                outputs.append(DeliveryReports.report(send, target: nil, installationID: skipped.installationID, outcome: .suppressed, reason: reason, attempts: 0, now: now))
                NotifierMetrics.outcome(channel: channel, outcome: .suppressed, reason: reason)
            }
            for var target in resolution.targets {
                if let expires = send.expiresAt, expires <= now {
                    // Reported only if this inserts the row (not one another owner finished).
                    guard try insertLedger(ledger, send: send, targetID: target.id, target: target, state: .failed, reason: .herald(.expired), now: now)
                    else { continue }
                    outputs.append(DeliveryReports.report(send, target: target, outcome: .failed, reason: .herald(.expired), attempts: 0, now: now))
                    NotifierMetrics.outcome(channel: channel, outcome: .failed, reason: .herald(.expired))
                } else if let gate, gate.isDisabled(target.id) {
                    guard try insertLedger(ledger, send: send, targetID: target.id, target: target, state: .parked, reason: .herald(.endpointDisabled), now: now)
                    else { continue }
                    outputs.append(DeliveryReports.report(send, target: target, outcome: .parked, reason: .herald(.endpointDisabled), attempts: 0, now: now))
                } else {
                    target.badge = try Badges.decide(db, send: send, target: target)
                    let claiming = claimed.count < limit && (gate?.take(target.id, sendID: sendID) ?? true)
                    // A row already here (finished by another owner, whose report was read back) is not claimed.
                    guard try insertLedger(
                        ledger, send: send, targetID: target.id, target: target, state: claiming ? .sending : .pending, reason: nil,
                        now: now, attempts: claiming ? 1 : 0)
                    else {
                        if claiming { gate?.give(target.id, sendID: sendID) }
                        continue
                    }
                    try Badges.record(db, project: send.project, target: target, now: now)
                    if claiming {
                        claimed.append(Claimed(attempt: DeliveryAttempt(request: send, target: target, attempt: 1), profileKey: send.profileKey, contact: contact))
                    }
                }
            }
        }
        return (claimed, outputs)
    }

    private static func encode(_ target: DeliveryTarget) throws -> String {
        String(decoding: try Wire.encodeValue(target), as: UTF8.self)
    }

    /// A new ledger row for a target of `send`; false when one is there (finished by another owner).
    private static func insertLedger(
        _ ledger: LedgerTable, send: SendRequest, targetID: String, target: DeliveryTarget?, state: LedgerState,
        reason: DeliveryReason?, now: Date, attempts: Int = 0
    ) throws -> Bool {
        try ledger.insert(
            sendID: send.sendID, targetID: targetID, channel: send.channel, profileKey: send.profileKey,
            target: try target.map(encode) ?? "{}", state: state, attempts: attempts, reason: reason, at: now)
    }
}
