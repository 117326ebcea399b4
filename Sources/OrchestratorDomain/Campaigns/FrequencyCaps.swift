import Foundation
import GRDB
import Logging
import Metrics
import PartitionStore
import Shared

/// Frequency caps: how many marketing messages a profile may receive per rolling period (docs/campaigns.md).
/// Decisions are counted as they are made, in the partition's transaction, so two campaigns deciding at the same
/// moment for the same profile cannot both take its last slot; the notifier's reports confirm them or free them.
extension Engagement {
    /// Whether a message on `channel` of the campaign would pass every cap of its project now.
    func withinFrequencyCaps(_ campaign: CampaignDefinition, key: String, channel: MessageChannel) throws -> Bool {
        for cap in rules.config.frequencyCaps(of: campaign) where cap.covers(channel) {
            let since = WireTime.format(now.addingTimeInterval(-cap.period))
            let counted: Int
            if let only = cap.channel {
                counted = try Int.fetchOne(
                    db.cachedStatement(sql: """
                        SELECT count(*) FROM frequency_log
                        WHERE profile_key = ? AND at > ? AND state != 'released' AND channel = ?
                        """), arguments: [key, since, only.rawValue]) ?? 0
            } else {
                counted = try Int.fetchOne(
                    db.cachedStatement(sql: """
                        SELECT count(*) FROM frequency_log WHERE profile_key = ? AND at > ? AND state != 'released'
                        """), arguments: [key, since]) ?? 0
            }
            if counted >= cap.max { return false }
        }
        return true
    }

    /// Counts a decided marketing message against the profile's caps (transactional messages are not counted).
    func countForFrequencyCaps(_ campaign: CampaignDefinition, key: String, channel: MessageChannel, sendID: String) throws {
        guard campaign.marketing else { return }
        try db.executeCached(
            sql: "INSERT OR IGNORE INTO frequency_log (profile_key, send_id, channel, at, state) VALUES (?, ?, ?, ?, 'decided')",
            arguments: [key, sendID, channel.rawValue, WireTime.format(now)])
    }

    func frequencyCapped(_ campaign: CampaignDefinition, channel: MessageChannel, occurrence: String) {
        count(campaign, "frequency_capped")
        Counter(label: "herald_frequency_capped_total", dimensions: [("channel", channel.rawValue)]).increment()
        Logger(label: "herald.campaigns").info(
            "send frequency-capped",
            metadata: ["campaign": "\(campaign.key)", "channel": "\(channel.rawValue)", "occurrence": "\(occurrence)"])
    }
}

extension ProfileApplier {
    /// A delivery report about a send of the frequency log: made (`sent`: it counts for good), or not made (the slot
    /// is free again, unless another target of the send was made). A report on a send the log does not hold changes
    /// nothing.
    static func settleFrequencyLog(_ db: Database, key: String, report: DeliveryReport) throws {
        guard let sendID = report.sendID else { return }
        switch report.outcome {
        case .sent:
            try db.executeCached(
                sql: "UPDATE frequency_log SET state = 'sent' WHERE profile_key = ? AND send_id = ? AND state != 'sent'",
                arguments: [key, sendID])
        case .failed, .suppressed, .tokenInvalid, .bounced:
            try db.executeCached(
                sql: "UPDATE frequency_log SET state = 'released' WHERE profile_key = ? AND send_id = ? AND state = 'decided'",
                arguments: [key, sendID])
        case .unsubscribed, .subscribed, .opened:
            break
        }
    }
}
