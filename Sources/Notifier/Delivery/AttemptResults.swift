import Foundation
import GRDB
import Logging
import PartitionStore
import Shared

/// What attempts' results do to the ledger (docs/notifier.md, "The ledger"): a target finished (sent, failed, its
/// token or address dead, the recipient unsubscribed), with its report and the local feedback it teaches, or retried
/// later.
enum AttemptResults {
    /// An attempt's result, for `complete`.
    struct AttemptResult: Sendable {
        var claimed: SendClaims.Claimed
        var provider: String
        var outcome: ProviderOutcome
        var finishedAt: Date
        /// The endpoint's HTTP status and the attempt's duration, which a webhook's reports carry.
        var httpStatus: Int? = nil
        var duration: Duration? = nil
    }

    /// What a provider's answer finishes a target as: the ledger state, the report's outcome and reason, and the local
    /// feedback it teaches (a dead token or address, an unsubscribe). nil: not finished (retried later).
    struct Finish {
        var state: LedgerState
        var outcome: DeliveryReport.Outcome
        var reason: DeliveryReason?
        var messageID: String?
        var feedback: (kind: FeedbackKind, value: String)?
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
                return Finish(state: .failed, outcome: .tokenInvalid, reason: reason, feedback: (.tokenInvalid, attempt.target.address))
            case .email:
                return Finish(state: .failed, outcome: .bounced, reason: reason, feedback: (.emailBounced, attempt.target.address))
            case .sms, .webhook:
                return Finish(state: .failed, outcome: .failed, reason: reason)
            }
        case .endpointGone(let reason):
            return Finish(state: .parked, outcome: .parked, reason: reason)
        case .unsubscribed(let reason):
            return Finish(
                state: .failed, outcome: .unsubscribed, reason: reason,
                feedback: FeedbackKind.marketing(channel).map { ($0, "unsubscribed") })
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
            let key = result.claimed.profileKey
            let target = attempt.target
            let ledger = LedgerTable(db)
            guard let finished = finishing(result) else {
                // Retried: unless this was the last attempt.
                guard case .retry(let reason, let after) = result.outcome else { continue }
                let delay = retry.delay(afterAttempt: attempt.attempt, retryAfter: after)
                let due = result.finishedAt.addingTimeInterval(delay.timeInterval)
                if let spent = retry.exhausted(afterAttempt: attempt.attempt, start: send.notBefore ?? send.decidedAt, next: due) {
                    if try ledger.finishAttempt(
                        sendID: send.sendID, targetID: target.id, attempt: attempt.attempt, .failed,
                        reason: .herald(spent, detail: reason.text), messageID: nil, at: result.finishedAt)
                    {
                        outputs.append(report(result, Finish(state: .failed, outcome: .failed, reason: .herald(spent))))
                        NotifierMetrics.outcome(channel: send.channel, outcome: .failed, reason: .herald(spent))
                    }
                    continue
                }
                if try ledger.retry(
                    sendID: send.sendID, targetID: target.id, attempt: attempt.attempt, due: due, reason: reason,
                    at: result.finishedAt)
                {
                    NotifierMetrics.retries(channel: send.channel, reason: reason)
                    // A webhook reports each attempt: its status and latency, and that another comes.
                    if send.channel == .webhook {
                        outputs.append(report(result, Finish(state: .pending, outcome: .retrying, reason: reason)))
                    }
                }
                continue
            }
            var applied = try ledger.finishAttempt(
                sendID: send.sendID, targetID: target.id, attempt: attempt.attempt, finished.state, reason: finished.reason,
                messageID: finished.messageID, at: result.finishedAt)
            if !applied && finished.state == .sent {
                applied = try ledger.finishPending(
                    sendID: send.sendID, targetID: target.id, .sent, reason: nil, messageID: finished.messageID, at: result.finishedAt)
                if !applied {
                    // Reached all the same: said so (the report's id is the same as the current attempt's would be).
                    outputs.append(report(result, finished))
                }
            }
            guard applied else { continue }
            if let feedback = finished.feedback {
                try FeedbackTable(db).record(key, feedback.kind, value: feedback.value, at: result.finishedAt)
                // A hard bounce puts the address on the project's suppression list: no profile sends to it again.
                if feedback.kind == .emailBounced {
                    outputs.append(SuppressionList.record(SuppressionEntry(
                        project: send.project, channel: .email, address: feedback.value, reason: "hard_bounce", by: "notifier",
                        at: result.finishedAt)))
                }
            }
            outputs.append(report(result, finished))
            if case .endpointGone = result.outcome { outputs.append(WebhookEndpointStates.disabling(send, at: result.finishedAt)) }
            NotifierMetrics.outcome(channel: send.channel, outcome: finished.outcome, reason: finished.reason)
            if finished.state == .sent {
                if send.channel == .push {
                    try Inbox.store(db, send: send, target: target, contact: result.claimed.contact, at: result.finishedAt)
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
                channel: result.claimed.attempt.request.channel, outcome: finished.outcome, reason: finished.reason)
            return report(result, finished)
        }
    }

    /// The report of an attempt's result that finished its target.
    static func report(_ result: AttemptResult, _ finished: Finish) -> PendingOutput {
        let attempt = result.claimed.attempt
        return DeliveryReports.report(
            attempt.request, target: attempt.target, outcome: finished.outcome, reason: finished.reason,
            attempts: attempt.attempt, provider: result.provider, messageID: finished.messageID, now: result.finishedAt,
            httpStatus: result.httpStatus, duration: result.duration)
    }
}
