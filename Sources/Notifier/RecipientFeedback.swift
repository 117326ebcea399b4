import Foundation
import PartitionStore
import Shared

/// A recipient's own change of subscription, arriving over HTTP (an SMS reply, a one-click unsubscribe): local state at
/// once, in whichever partitions of this instance hold the profile, and a report for the orchestrator.
extension NotifierPartitions {
    /// Records a recipient's feedback arriving over HTTP (an SMS reply, an email unsubscribe): local state at once, and
    /// a report for the orchestrator, for the profile `key` or those of `phoneNumber` in `projects` (nil: any). Returns
    /// how many profiles this instance's partitions hold.
    func recordRecipientFeedback(
        key: String?, phoneNumber: String?, projects: Set<String>?, channel: MessageChannel, outcome: DeliveryReport.Outcome, address: String?,
        reason: String, at: Date
    ) async throws -> Int {
        var recorded = 0
        for (number, database) in await owner.openDatabases {
            let keys: [String] = try await database.read { db in
                if let key { return try ContactsTable(db).contact(key) != nil ? [key] : [] }
                return try ContactsTable(db).profiles(phoneNumber: phoneNumber ?? "").filter { key in
                    projects.map { $0.contains(ProfileKey.project(of: key)) } ?? true
                }
            }
            guard !keys.isEmpty else { continue }
            _ = try await database.writeWithOutbox { db in
                var outputs: [PendingOutput] = []
                for key in keys {
                    guard let contact = try ContactsTable(db).contact(key), let kind = FeedbackKind.marketing(channel) else { continue }
                    let state = outcome == .subscribed ? "subscribed" : "unsubscribed"
                    try FeedbackTable(db).record(key, kind, value: state, at: at)
                    let report = DeliveryReport.recipientFeedback(
                        key: key, customID: contact.customID, channel: channel, outcome: outcome, address: address, reason: reason,
                        at: at)
                    outputs.append(PendingOutput(topic: HeraldTopic.deliveries.name, key: key, value: try Wire.encode(report)))
                }
                return ((), outputs)
            }
            await owner.scheduleFlush(number)
            recorded += keys.count
        }
        return recorded
    }
}

extension DeliveryReport {
    /// A recipient's own change of subscription (an SMS reply, a one-click unsubscribe), for the orchestrator. The id
    /// names the change, so a replay of the same request at the same instant is one report.
    static func recipientFeedback(
        key: String, customID: String?, channel: MessageChannel, outcome: Outcome, address: String?, reason: String,
        sendID: String? = nil, at: Date
    ) -> DeliveryReport {
        let state = outcome == .subscribed ? "subscribed" : "unsubscribed"
        var report = DeliveryReport(
            id: "\(channel.rawValue)-\(state)/\(key)/\(WireTime.format(at))", sendID: sendID,
            project: ProfileKey.project(of: key), customID: customID,
            channel: channel, outcome: outcome, reason: reason, address: address, at: at)
        report.profileKey = key
        return report
    }
}
