import Foundation
import GRDB
import Logging
import PartitionStore
import Shared

/// When a decided send may leave: quiet hours in the recipient's local time (docs/campaigns.md, "Quiet hours").
struct QuietHoursHold {
    let db: Database
    let rules: EngagementRules
    let now: Date

    /// Whether the campaign's send may be decided now. Inside the quiet hours of a marketing campaign, in the profile's
    /// time zone, the send is held on a durable timer until the window ends (`held_quiet_hours`; then decided again
    /// from the start: expiry, audience, eligibility) or dropped (`quiet_hours`). Transactional sends are never held.
    func allowsNow(_ campaign: CampaignDefinition, key: String, values: ProfileValues, _ context: TriggerContext) throws -> Bool {
        guard let window = rules.config.quietHours(of: campaign) else { return true }
        let zone = values.timeZoneName
        // A send decided ahead of its time (a local-time release) is checked at that time.
        guard let end = window.end(holding: max(now, context.at), in: TimeZones.named(zone)) else { return true }
        let metadata: Logger.Metadata = [
            "campaign": "\(campaign.key)", "occurrence": "\(context.occurrence)", "timezone": "\(zone)",
            "until": .time(end),
        ]
        switch window.action {
        case .drop:
            CampaignMetrics.decision(campaign, .quietHours)
            Logger(label: "herald.campaigns").info("send dropped in quiet hours", metadata: metadata)
        case .hold:
            try TimersTable(db).set(
                key: key, kind: .quiet, ref: "\(campaign.key) \(context.occurrence)", due: end, payload: context.json)
            CampaignMetrics.decision(campaign, .heldQuietHours)
            Logger(label: "herald.campaigns").debug("send held in quiet hours", metadata: metadata)
        }
        return false
    }
}
