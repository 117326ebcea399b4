import Foundation
import GRDB
import PartitionStore
import Shared

/// A scheduled campaign's send rate limit (docs/campaigns.md, "Send rate limits"): its audience is decided in pages
/// small enough to go about once a second, each page no sooner than the campaign's pace allows. The pace is a row of
/// the partition's database (`campaign_pace`), written in the transaction that decides the page, so a restart goes on
/// at the same rate from the page after the last one committed, and never decides one twice.
struct SendPacing {
    let db: Database
    let rules: EngagementRules
    let now: Date

    /// A rate-limited campaign's page size in this partition and the time between pages (nil: not limited). The
    /// limit counts messages: a member is up to one message per channel of the campaign, and the partitions share the
    /// limit evenly (a profile's partition is a hash of its key, so each holds about the same share of an audience).
    func pace(_ campaign: CampaignDefinition) -> (members: Int, every: TimeInterval)? {
        guard let limit = campaign.rateLimit else { return nil }
        let membersPerMinute = limit / Double(rules.partitions) / Double(max(1, campaign.messages.count))
        let members = max(1, min(ScheduledRuns.page, Int((membersPerMinute / 60).rounded(.up))))
        return (members, Double(members) * 60 / membersPerMinute)
    }

    /// How many members the campaign's next page may hold now: its page size, or 0 while its pace holds it back (the
    /// caller's timer is then set again for `waitUntil`).
    func pageAllowed(_ campaign: CampaignDefinition) throws -> (members: Int, waitUntil: Date?) {
        guard let pace = pace(campaign) else { return (ScheduledRuns.page, nil) }
        guard let next = try CampaignPaceTable(db).next(campaign.key), next > now else { return (pace.members, nil) }
        return (0, next)
    }

    /// Records that a page of the campaign was decided now: the next one may go one interval after this one was due
    /// (the rate holds on average although the ticker runs a page up to a tick late), or one interval from now when
    /// the partition fell a whole interval behind (after a restart: no burst to catch up). Returns when the next page
    /// may go (nil: not limited).
    func pageDecided(_ campaign: CampaignDefinition) throws -> Date? {
        guard let pace = pace(campaign) else { return nil }
        let table = CampaignPaceTable(db)
        let due = try table.next(campaign.key) ?? now
        let next = now.timeIntervalSince(due) < pace.every ? due + pace.every : now + pace.every
        try table.setNext(campaign.key, at: next)
        return next
    }
}
