import Foundation
import PartitionStore
import Shared

/// The reports of finished targets on `herald.deliveries`: read by the orchestrator (reachability, the frequency log)
/// and back by the notifier (the ledger handover).
enum DeliveryReports {
    /// A report on `herald.deliveries` for one target of a send.
    static func report(
        _ send: SendRequest, target: DeliveryTarget?, installationID: String? = nil, outcome: DeliveryReport.Outcome,
        reason: DeliveryReason?, attempts: Int, provider: String? = nil, messageID: String? = nil, now: Date,
        httpStatus: Int? = nil, duration: Duration? = nil
    ) -> PendingOutput {
        let channel = DeliveryReport.Channel(send.channel)
        let targetID = target?.id ?? installationID ?? send.channel.rawValue
        var report = DeliveryReport(
            // A webhook's attempts each have their report: theirs carries the attempt.
            id: "\(send.sendID)/\(targetID)/\(outcome.rawValue)" + (outcome == .retrying ? "/\(attempts)" : ""), sendID: send.sendID, project: send.project,
            customID: send.customID, installationID: target?.installationID ?? installationID, channel: channel,
            outcome: outcome, reason: reason?.text, token: send.channel == .push ? target?.address : nil,
            address: send.channel == .push ? nil : target?.address, at: now)
        report.profileKey = send.profileKey
        report.targetID = targetID
        report.campaign = send.campaign
        report.experiment = send.experiment
        report.variant = send.variant
        report.provider = provider
        report.providerMessageID = messageID
        report.attempts = attempts
        report.triggeredAt = send.trigger.at
        report.decidedAt = send.decidedAt
        if send.channel == .webhook {
            report.httpStatus = httpStatus
            report.latencyMS = duration.map { Int($0.milliseconds) }
        }
        return PendingOutput(topic: HeraldTopic.deliveries.name, key: send.profileKey, value: (try? Wire.encode(report)) ?? [])
    }
}
