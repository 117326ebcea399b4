import Foundation
import PartitionStore
import Shared

/// A recipient's own change of subscription, arriving over HTTP (an SMS reply, a one-click unsubscribe): local state at
/// once, in whichever partitions hold the profile, and a report for the orchestrator.
extension NotifierPartitions {
    /// Records `change` in every partition open here; returns how many profiles they hold.
    func recordRecipientFeedback(_ change: RecipientChange) async throws -> Int {
        var recorded = 0
        for (_, database) in await owner.openDatabases {
            recorded += try await record(change, database)
        }
        return recorded
    }

    /// Records `change` in `partitions`, each running here (as work their revocation waits for); how many profiles
    /// they hold, or nil when one is not running here.
    func recordRecipientFeedback(_ change: RecipientChange, in partitions: [Int32]) async throws -> Int? {
        try await owner.run(onEach: partitions) { database in try await self.record(change, database) }?
            .reduce(0, +)
    }

    /// Records `change` for the profiles it names in this partition; how many hold it. A change to the state a profile
    /// already has (a second STOP, an unsubscribe link followed again) is not written and not reported: a person
    /// repeating themselves is one change.
    private func record(_ change: RecipientChange, _ database: PartitionDatabase) async throws -> Int {
        let keys: [String] = try await database.read { db in
            if let key = change.key { return try ContactsTable(db).contact(key) != nil ? [key] : [] }
            return try ContactsTable(db).profiles(phoneNumber: change.phoneNumber ?? "").filter { key in
                change.projects.map { $0.contains(ProfileKey.project(of: key)) } ?? true
            }
        }
        guard !keys.isEmpty, let kind = FeedbackKind.marketing(change.channel) else { return keys.count }
        let state = change.outcome == .subscribed ? "subscribed" : "unsubscribed"
        let (changed, _) = try await database.writeWithOutbox { db in
            var outputs: [PendingOutput] = []
            for key in keys {
                guard let contact = try ContactsTable(db).contact(key) else { continue }
                let channel = change.channel == .email ? contact.email : contact.sms
                let local = try FeedbackTable(db).feedback(key).marketing[change.channel.rawValue]
                guard channel.marketing(local: local) != state else { continue }
                try FeedbackTable(db).record(key, kind, value: state, at: change.at)
                let report = DeliveryReport.recipientFeedback(
                    key: key, customID: contact.customID, channel: change.channel, outcome: change.outcome, address: change.address,
                    reason: change.reason, at: change.at)
                outputs.append(PendingOutput(topic: HeraldTopic.deliveries.name, key: key, value: try Wire.encode(report)))
            }
            return (!outputs.isEmpty, outputs)
        }
        if changed { await owner.scheduleFlush(database.partition) }
        return keys.count
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
            id: "\(channel.rawValue)-\(state)/\(key)/\(wire: at)", sendID: sendID,
            project: ProfileKey.project(of: key), customID: customID,
            channel: DeliveryReport.Channel(channel), outcome: outcome, reason: reason, address: address, at: at)
        report.profileKey = key
        return report
    }
}
