import Foundation
import GRDB
import Logging
import Metrics
import PartitionStore
import Shared

/// Frequency caps: how many marketing messages a profile may receive per rolling period (docs/campaigns.md).
/// Decisions are counted as they are made, in the partition's transaction, so two campaigns deciding at the same
/// moment for the same profile cannot both take its last slot; the notifier's reports confirm them or free them.
struct FrequencyCaps {
    let db: Database
    let rules: EngagementRules
    let now: Date

    /// Whether a message on `channel` of the campaign would pass every cap of its project now.
    /// A webhook is a call to the customer's own system, not a message the person receives: never capped, never
    /// counted (docs/webhooks.md).
    func allow(_ campaign: CampaignDefinition, key: String, channel: MessageChannel) throws -> Bool {
        guard channel != .webhook else { return true }
        let log = FrequencyLogTable(db)
        for cap in rules.config.frequencyCaps(of: campaign) where cap.covers(channel) {
            let since = now.addingTimeInterval(-cap.period)
            if try log.count(key, since: since, channel: cap.channel) >= cap.max { return false }
        }
        return true
    }

    /// Counts a decided marketing message against the profile's caps (transactional messages are not counted).
    func count(_ campaign: CampaignDefinition, key: String, channel: MessageChannel, sendID: String) throws {
        guard campaign.marketing, channel != .webhook else { return }
        try FrequencyLogTable(db).decided(key, sendID: sendID, channel: channel, at: now)
    }

    func capped(_ campaign: CampaignDefinition, channel: MessageChannel, occurrence: String) {
        CampaignMetrics.decision(campaign, .frequencyCapped)
        Counter(label: "herald_frequency_capped_total", dimensions: [("channel", channel.rawValue)]).increment()
        Logger(label: "herald.campaigns").info(
            "send frequency-capped",
            metadata: ["campaign": "\(campaign.key)", "channel": "\(channel.rawValue)", "occurrence": "\(occurrence)"])
    }

    /// A delivery report about a send of the frequency log: made (`sent`: it counts for good), or not made (the slot
    /// is free again, unless another target of the send was made). A report on a send the log does not hold changes
    /// nothing.
    static func settle(_ db: Database, key: String, report: DeliveryReport) throws {
        guard let sendID = report.sendID else { return }
        switch report.outcome {
        case .sent: try FrequencyLogTable(db).sent(key, sendID: sendID)
        case .failed, .suppressed, .tokenInvalid, .bounced: try FrequencyLogTable(db).released(key, sendID: sendID)
        case .unsubscribed, .subscribed, .opened, .clicked, .viewed, .dismissed, .retrying, .parked: break
        }
    }
}
