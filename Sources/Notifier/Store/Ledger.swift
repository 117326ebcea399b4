import Foundation
import CoreMetrics
import GRDB
import Logging
import PartitionStore
import Shared

// The send ledger: one row per send and target, claimed for attempts and finished by their outcomes, with the
// reports of what was finished (docs/notifier.md, "The ledger").
extension NotifierStore {
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
    static let waitingReasons: Set<String> = ["no_contact", "no_installation", "no_token", "no_address"]
    private static let logger = Logger(label: "herald.notifier")

    /// Takes up to `limit` attempts of `channel` that are due: first the due ledger rows, each re-checked against the
    /// contact state of now and marked `sending` if still reachable; then, while the limit has room, fans out queued
    /// sends into ledger rows (their targets as of now), inserted `sending` at once up to the limit (one statement per
    /// target instead of an insert, a read and an update). Suppressed and expired rows are finished here, with their
    /// reports.
    static func claim(
        _ db: Database, channel: MessageChannel, limit: Int, now: Date, platforms: [String: String]
    ) throws -> (claimed: [Claimed], outputs: [PendingOutput]) {
        var outputs: [PendingOutput] = []
        let time = WireTime.format(now)
        try releaseHeld(db, channel: channel, time: time)
        // Each profile's contact and local feedback, read once per claim (fan-out and due rows alike; neither changes
        // them).
        var states: [String: (contact: Contact?, feedback: LocalFeedback)] = [:]
        func state(_ key: String) throws -> (contact: Contact?, feedback: LocalFeedback) {
            if let known = states[key] { return known }
            let read = (try contact(db, key: key), try feedback(db, key: key))
            states[key] = read
            return read
        }
        // Each send request decoded once per claim: a retry of several targets of one send.
        var requests: [String: SendRequest] = [:]
        func request(_ sendID: String, _ row: Row) -> SendRequest? {
            if let known = requests[sendID] { return known }
            let decoded = try? Wire.decode(SendRequest.self, from: Array(row["request"] as Data))
            requests[sendID] = decoded
            return decoded
        }
        // Due rows first: retries, and targets an earlier fan-out left beyond its limit, so that a stream of new sends
        // never starves them.
        var claimed: [Claimed] = []
        let due = try Row.fetchAll(
            db.cachedStatement(sql: """
                SELECT l.send_id, l.target_id, l.target, l.attempts, l.profile_key, s.request
                FROM ledger l JOIN sends s ON s.send_id = l.send_id
                WHERE l.channel = ? AND l.state = 'pending' AND l.due_at <= ? ORDER BY l.due_at LIMIT ?
                """), arguments: [channel.rawValue, time, limit])
        for row in due {
            let sendID: String = row["send_id"]
            let targetID: String = row["target_id"]
            let attempts: Int = row["attempts"]
            guard let send = request(sendID, row),
                var target = try? Wire.decodeValue(DeliveryTarget.self, from: Array((row["target"] as String).utf8))
            else {
                try finish(db, sendID: sendID, targetID: targetID, state: .failed, reason: "unreadable ledger row", messageID: nil, now: time)
                continue
            }
            if let expires = send.expiresAt, expires <= now {
                try finish(db, sendID: sendID, targetID: targetID, state: .failed, reason: "expired", messageID: nil, now: time)
                outputs.append(report(send, target: target, outcome: .failed, reason: "expired", attempts: attempts, now: now))
                NotifierMetrics.outcome(channel: channel, outcome: "failed", reason: "expired")
                continue
            }
            // The state at send time wins: re-check this target now (a retry may come long after the fan-out).
            let key = send.profileKey
            let (contact, feedback) = try state(key)
            let resolution = Eligibility.resolve(send, contact: contact, feedback: feedback, platforms: platforms)
            guard let current = resolution.targets.first(where: { $0.id == targetID }) else {
                let reason = resolution.skipped.first(where: { $0.id == targetID })?.reason
                    ?? resolution.skipped.first?.reason ?? "unreachable"
                try finish(db, sendID: sendID, targetID: targetID, state: .suppressed, reason: reason, messageID: nil, now: time)
                outputs.append(report(send, target: target, outcome: .suppressed, reason: reason, attempts: attempts, now: now))
                NotifierMetrics.outcome(channel: channel, outcome: "suppressed", reason: reason)
                continue
            }
            // A token replaced since the fan-out: the installation's new token (the badge stays the one decided then).
            let badge = target.badge
            target = current
            target.badge = badge
            try db.executeCached(sql: """
                    UPDATE ledger SET state = 'sending', attempts = attempts + 1, target = ?, updated_at = ?
                    WHERE send_id = ? AND target_id = ?
                    """, arguments: [encode(target), time, sendID, targetID])
            claimed.append(Claimed(attempt: DeliveryAttempt(request: send, target: target, attempt: attempts + 1), profileKey: key, contact: contact))
        }
        // Fan-out of new sends, their targets claimed at once while the limit has room (the rest wait as `pending` rows
        // for the next claim). In arrival order (the index's rowid order); those waiting for their contact only once
        // their check is due.
        guard claimed.count < limit else { return (claimed, outputs) }
        let queued = try Row.fetchAll(
            db.cachedStatement(sql: """
                SELECT send_id, request, received_at, check_at FROM sends
                WHERE channel = ? AND state = 'queued' AND (check_at IS NULL OR check_at <= ?) LIMIT ?
                """),
            arguments: [channel.rawValue, time, limit - claimed.count])
        for row in queued {
            let sendID: String = row["send_id"]
            guard let send = request(sendID, row) else {
                try db.executeCached(sql: "UPDATE sends SET state = 'resolved', check_at = NULL WHERE send_id = ?", arguments: [sendID])
                continue
            }
            let (contact, feedback) = try state(send.profileKey)
            // The orchestrator writes a profile's contact snapshot before the sends it decides after, but on another
            // topic: the snapshot may reach this consumer a batch later. A send waits for the revision it was decided
            // on instead of being resolved on an older snapshot (which may not have its token or address yet).
            let waited = now.timeIntervalSince(WireTime.parse(row["received_at"]) ?? now)
            if let needed = send.contactRevision, send.token == nil, (contact?.revision ?? 0) < needed {
                if waited < contactRevisionWait {
                    try waitForContact(db, sendID: sendID, now: now)
                    continue
                }
                logger.warning(
                    "send resolved without the contact it was decided on",
                    metadata: [
                        "send_id": "\(sendID)", "campaign": "\(send.campaign)", "revision": "\(needed)",
                        "held_revision": "\(contact?.revision ?? 0)", "seconds": "\(Int(waited))",
                    ])
            }
            if send.contactRevision != nil, waited >= contactSettle, row["check_at"] as String? != nil {
                // What the rule before revisions would have suppressed: a lag between the two topics worth knowing.
                logger.info(
                    "send waited for the contact it was decided on",
                    metadata: ["send_id": "\(sendID)", "campaign": "\(send.campaign)", "seconds": "\(String(format: "%.1f", waited))"])
            }
            let resolution = Eligibility.resolve(send, contact: contact, feedback: feedback, platforms: platforms)
            // Sends from before revisions: one that finds nobody to reach waits a moment for a newer snapshot.
            if send.contactRevision == nil, resolution.targets.isEmpty, waited < contactSettle,
                resolution.skipped.allSatisfy({ waitingReasons.contains($0.reason) })
            {
                try waitForContact(db, sendID: sendID, now: now)
                continue
            }
            try db.executeCached(sql: "UPDATE sends SET state = 'resolved', check_at = NULL WHERE send_id = ?", arguments: [sendID])
            for skipped in resolution.skipped {
                try insertLedger(db, send: send, targetID: skipped.id, target: nil, state: .suppressed, reason: skipped.reason, now: time)
                outputs.append(report(send, target: nil, installationID: skipped.installationID, outcome: .suppressed, reason: skipped.reason, attempts: 0, now: now))
                NotifierMetrics.outcome(channel: channel, outcome: "suppressed", reason: skipped.reason)
            }
            for var target in resolution.targets {
                if let expires = send.expiresAt, expires <= now {
                    // Reported only if this inserts the row (not one another owner finished).
                    try insertLedger(db, send: send, targetID: target.id, target: target, state: .failed, reason: "expired", now: time)
                    guard db.changesCount > 0 else { continue }
                    outputs.append(report(send, target: target, outcome: .failed, reason: "expired", attempts: 0, now: now))
                    NotifierMetrics.outcome(channel: channel, outcome: "failed", reason: "expired")
                } else {
                    target.badge = try Badges.decide(db, send: send, target: target)
                    let claiming = claimed.count < limit
                    // A row already here (finished by another owner, whose report was read back) is not claimed.
                    try insertLedger(
                        db, send: send, targetID: target.id, target: target, state: claiming ? .sending : .pending, reason: nil, now: time,
                        attempts: claiming ? 1 : 0)
                    guard db.changesCount > 0 else { continue }
                    try Badges.record(db, project: send.project, target: target, now: time)
                    if claiming {
                        claimed.append(Claimed(attempt: DeliveryAttempt(request: send, target: target, attempt: 1), profileKey: send.profileKey, contact: contact))
                    }
                }
            }
        }
        return (claimed, outputs)
    }

    /// Queues the held sends whose time came, as if received then (their wait for a contact counts from it); in arrival
    /// order with the others.
    private static func releaseHeld(_ db: Database, channel: MessageChannel, time: String) throws {
        try db.executeCached(
            sql: "UPDATE sends SET state = 'queued', received_at = not_before WHERE channel = ? AND state = 'held' AND not_before <= ?",
            arguments: [channel.rawValue, time])
    }

    /// Holds a queued send until its next check (or until a snapshot of its profile arrives: `releaseWaiting`).
    private static func waitForContact(_ db: Database, sendID: String, now: Date) throws {
        try db.executeCached(
            sql: "UPDATE sends SET check_at = ? WHERE send_id = ?",
            arguments: [WireTime.format(now.addingTimeInterval(contactRecheck)), sendID])
    }

    /// A contact snapshot of `key` arrived: its sends waiting for one are due now (`check_at` empty: before any time,
    /// and still saying that the send waited).
    static func releaseWaiting(_ db: Database, key: String) throws {
        try db.executeCached(
            sql: "UPDATE sends SET check_at = '' WHERE profile_key = ? AND check_at > '' AND state = 'queued'",
            arguments: [key])
    }

    private static func encode(_ target: DeliveryTarget) throws -> String {
        String(decoding: try Wire.encodeValue(target), as: UTF8.self)
    }

    private static func insertLedger(
        _ db: Database, send: SendRequest, targetID: String, target: DeliveryTarget?, state: State, reason: String?,
        now: String, attempts: Int = 0
    ) throws {
        try db.executeCached(sql: """
                INSERT INTO ledger (send_id, target_id, channel, profile_key, target, state, attempts, due_at, reason, updated_at)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING
                """, arguments: [
                    send.sendID, targetID, send.channel.rawValue, send.profileKey,
                    try target.map(encode) ?? "{}", state.rawValue, attempts, now, reason, now,
                ])
    }

    /// Finishes a row the claim is looking at (`pending`): expired, suppressed or unreadable.
    private static func finish(
        _ db: Database, sendID: String, targetID: String, state: State, reason: String?, messageID: String?, now: String
    ) throws {
        try db.executeCached(sql: """
                UPDATE ledger SET state = ?, reason = ?, provider_message_id = ?, updated_at = ?
                WHERE send_id = ? AND target_id = ? AND state = 'pending'
                """, arguments: [state.rawValue, reason, messageID, now, sendID, targetID])
    }

    /// Finishes a row with the outcome of attempt `attempt`, if the row is still at that attempt; returns whether it
    /// was.
    private static func finishAttempt(
        _ db: Database, _ sendID: String, _ targetID: String, attempt: Int, _ state: State, reason: String?,
        messageID: String?, now: String
    ) throws -> Bool {
        try db.executeCached(sql: """
                UPDATE ledger SET state = ?, reason = ?, provider_message_id = ?, updated_at = ?
                WHERE send_id = ? AND target_id = ? AND attempts = ? AND state IN ('sending', 'pending')
                """, arguments: [state.rawValue, reason, messageID, now, sendID, targetID, attempt])
        return db.changesCount > 0
    }

    /// A report on `herald.deliveries` for one target of a send.
    static func report(
        _ send: SendRequest, target: DeliveryTarget?, installationID: String? = nil, outcome: DeliveryReport.Outcome,
        reason: String?, attempts: Int, provider: String? = nil, messageID: String? = nil, now: Date
    ) -> PendingOutput {
        let channel = send.channel
        let targetID = target?.id ?? installationID ?? send.channel.rawValue
        var report = DeliveryReport(
            id: "\(send.sendID)/\(targetID)/\(outcome.rawValue)", sendID: send.sendID, project: send.project,
            customID: send.customID, installationID: target?.installationID ?? installationID, channel: channel,
            outcome: outcome, reason: reason, token: send.channel == .push ? target?.address : nil,
            address: send.channel == .push ? nil : target?.address, at: now)
        report.profileKey = send.profileKey
        report.targetID = targetID
        report.campaign = send.campaign
        report.provider = provider
        report.providerMessageID = messageID
        report.attempts = attempts
        report.triggeredAt = send.trigger.at
        report.decidedAt = send.decidedAt
        return PendingOutput(topic: HeraldTopic.deliveries.name, key: send.profileKey, value: (try? Wire.encode(report)) ?? [])
    }

    /// An attempt's result, for `complete`.
    struct AttemptResult: Sendable {
        var claimed: Claimed
        var provider: String
        var outcome: ProviderOutcome
        var finishedAt: Date
    }

    /// What a provider's answer finishes a target as: the ledger state, the report's outcome and reason, and the local
    /// feedback it teaches (a dead token or address, an unsubscribe). nil: not finished (retried later).
    struct Finish {
        var state: State
        var outcome: DeliveryReport.Outcome
        var reason: String?
        var messageID: String?
        var feedback: (kind: String, value: String)?
    }

    static func finishing(_ result: AttemptResult) -> Finish? {
        let attempt = result.claimed.attempt
        let channel = attempt.request.channel
        switch result.outcome {
        case .accepted(let messageID):
            return Finish(state: .sent, outcome: .sent, reason: nil, messageID: messageID)
        case .failed(let reason):
            return Finish(state: .failed, outcome: .failed, reason: reason)
        case .targetInvalid(let reason):
            switch channel {
            case .push:
                return Finish(state: .failed, outcome: .tokenInvalid, reason: reason, feedback: ("token_invalid", attempt.target.address))
            case .email:
                return Finish(state: .failed, outcome: .bounced, reason: reason, feedback: ("email_bounced", attempt.target.address))
            case .sms:
                return Finish(state: .failed, outcome: .failed, reason: reason)
            }
        case .unsubscribed(let reason):
            return Finish(
                state: .failed, outcome: .unsubscribed, reason: reason, feedback: ("\(channel.rawValue)_marketing", "unsubscribed"))
        case .retry:
            return nil
        }
    }

    /// Writes attempts' results to the ledger, with their reports and local feedback: sent, failed, retried later
    /// (backoff with jitter, or the provider's Retry-After), or failed as `max_retry_attempts`.
    ///
    /// A result applies only to the attempt it belongs to: the row must still be at that attempt (`sending`, or
    /// `pending` again after a restart or a move turned it back). A result that comes after the row moved on (a newer
    /// attempt was claimed) changes nothing, except an acceptance: the target was reached, so a row waiting for another
    /// attempt is finished as sent, and the report says so either way.
    static func complete(_ db: Database, results: [AttemptResult], retry: RetryPolicy) throws -> [PendingOutput] {
        var outputs: [PendingOutput] = []
        for result in results {
            let attempt = result.claimed.attempt
            let send = attempt.request
            let time = WireTime.format(result.finishedAt)
            let key = result.claimed.profileKey
            let target = attempt.target
            guard let finished = finishing(result) else {
                // Retried: unless this was the last attempt.
                guard case .retry(let reason, let after) = result.outcome else { continue }
                guard attempt.attempt < retry.maxAttempts else {
                    if try finishAttempt(db, send.sendID, target.id, attempt: attempt.attempt, .failed, reason: "max_retry_attempts: \(reason)", messageID: nil, now: time) {
                        outputs.append(report(
                            send, target: target, outcome: .failed, reason: "max_retry_attempts",
                            attempts: attempt.attempt, provider: result.provider, now: result.finishedAt))
                        NotifierMetrics.outcome(channel: send.channel, outcome: "failed", reason: "max_retry_attempts")
                    }
                    continue
                }
                let delay = retry.delay(afterAttempt: attempt.attempt, retryAfter: after)
                let due = result.finishedAt.addingTimeInterval(delay.timeInterval)
                try db.executeCached(sql: """
                        UPDATE ledger SET state = 'pending', due_at = ?, reason = ?, updated_at = ?
                        WHERE send_id = ? AND target_id = ? AND attempts = ? AND state IN ('sending', 'pending')
                        """, arguments: [WireTime.format(due), reason, time, send.sendID, target.id, attempt.attempt])
                if db.changesCount > 0 { NotifierMetrics.retries(channel: send.channel, reason: reason) }
                continue
            }
            var applied = try finishAttempt(
                db, send.sendID, target.id, attempt: attempt.attempt, finished.state, reason: finished.reason,
                messageID: finished.messageID, now: time)
            if !applied && finished.state == .sent {
                try db.executeCached(sql: """
                        UPDATE ledger SET state = 'sent', reason = NULL, provider_message_id = ?, updated_at = ?
                        WHERE send_id = ? AND target_id = ? AND state = 'pending'
                        """, arguments: [finished.messageID, time, send.sendID, target.id])
                applied = db.changesCount > 0
                if !applied {
                    // Reached all the same: said so (the report's id is the same as the current attempt's would be).
                    outputs.append(report(result, finished))
                }
            }
            guard applied else { continue }
            if let feedback = finished.feedback {
                try recordFeedback(db, key: key, kind: feedback.kind, value: feedback.value, at: result.finishedAt)
            }
            outputs.append(report(result, finished))
            NotifierMetrics.outcome(channel: send.channel, outcome: finished.outcome.rawValue, reason: finished.reason)
            if finished.state == .sent {
                if send.channel == .push {
                    try InboxStore.store(db, send: send, target: target, contact: result.claimed.contact, at: result.finishedAt)
                }
                NotifierMetrics.latency(send: send, at: result.finishedAt)
            }
        }
        return outputs
    }

    /// Reports for results whose partition is not open here any more: every finished target, so that the partition's
    /// owner learns it from `herald.deliveries` (retried ones are left to it).
    static func lateReports(_ results: [AttemptResult]) -> [PendingOutput] {
        results.compactMap { result in
            guard let finished = finishing(result) else { return nil }
            NotifierMetrics.outcome(
                channel: result.claimed.attempt.request.channel, outcome: finished.outcome.rawValue, reason: finished.reason)
            return report(result, finished)
        }
    }

    /// The report of an attempt's result that finished its target.
    static func report(_ result: AttemptResult, _ finished: Finish) -> PendingOutput {
        let attempt = result.claimed.attempt
        return report(
            attempt.request, target: attempt.target, outcome: finished.outcome, reason: finished.reason,
            attempts: attempt.attempt, provider: result.provider, messageID: finished.messageID, now: result.finishedAt)
    }
}

extension NotifierStore {
    /// Whether `claim` would find anything (a read, cheaper than the write transaction).
    static func hasWork(_ db: Database, channel: MessageChannel, now: Date) throws -> Bool {
        try Bool.fetchOne(
            db.cachedStatement(sql: """
                SELECT EXISTS (SELECT 1 FROM sends WHERE channel = ?1 AND state = 'queued' AND (check_at IS NULL OR check_at <= ?2))
                    OR EXISTS (SELECT 1 FROM ledger WHERE channel = ?1 AND state = 'pending' AND due_at <= ?2)
                    OR EXISTS (SELECT 1 FROM sends WHERE channel = ?1 AND state = 'held' AND not_before <= ?2)
                """), arguments: [channel.rawValue, WireTime.format(now)]) ?? false
    }
}
