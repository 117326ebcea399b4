import Foundation
import GRDB
import PartitionStore
import Shared

/// Scheduled campaigns at an instant, once or every period (docs/campaigns.md, "Schedules"): each run sends to the
/// members of the campaign's audience in this partition, a page of members per transaction, its cursor kept in the
/// campaign's `schedule` timer. Local-time schedules are `LocalTimeRuns`; both share the recorded last run
/// (`campaign_state`) and the timer.
struct ScheduledRuns {
    let db: Database
    let rules: EngagementRules
    let now: Date

    /// How many members of an audience one run of a scheduled campaign decides in one transaction.
    static let page = 2000

    /// Sends a scheduled campaign's occurrence to the members of its audience in this partition, one page of members
    /// (after `after`, in key order) per transaction, as of `at` (the occurrence, or the page's slot when the
    /// campaign's rate limit spreads the run: `SendPacing`). While members are left, the timer is set again for the
    /// next page, due at once or at the pace's next slot, with the last key decided and the occurrence in its payload,
    /// so a restart goes on from there and a million members are never one transaction and one array. After the last
    /// page, sets the timer of the next occurrence.
    func run(
        _ campaign: CampaignDefinition, occurrence: Date, at: Date, after: String?, _ decider: inout CampaignDecider
    ) throws {
        guard let audience = campaign.audience else { return }
        let timers = TimersTable(db)
        func again(_ due: Date, after: String?) throws {
            var payload = [JSONMember("occurrence", .time(occurrence))]
            if let after { payload.append(JSONMember("after", .string(after))) }
            try timers.set(key: "", kind: .schedule, ref: campaign.key, due: due, payload: .object(payload))
        }
        // Members are listed once the audience's backfill is done here: until then, the run waits for it.
        if try SegmentBackfill(db: db, rules: rules, now: now).isBackfilling(audience: audience, of: campaign) {
            return try again(now.addingTimeInterval(SegmentBackfill.retry), after: after)
        }
        let pacing = SendPacing(db: db, rules: rules, now: now)
        let (page, waitUntil) = try pacing.pageAllowed(campaign)
        if let waitUntil { return try again(waitUntil, after: after) }
        let members = try SegmentMembersTable(db).page(segment: "\(campaign.project)/\(audience)", after: after, limit: page)
        for key in members {
            try decider.trigger(campaign, key: key, TriggerContext(type: .schedule, occurrence: "schedule \(wire: occurrence)", at: at))
        }
        let paced = members.isEmpty ? nil : try pacing.pageDecided(campaign)
        if members.count == page, let last = members.last { return try again(paced ?? occurrence, after: last) }
        try CampaignStateTable(db).recordRun(campaign.key, occurrence: occurrence)
        if let next = nextOccurrence(campaign, last: occurrence) {
            try timers.set(key: "", kind: .schedule, ref: campaign.key, due: next)
        }
    }

    /// The next run of a scheduled campaign after `last` (nil: none yet). A run missed by more than the campaign's
    /// expiry (default 1 hour), while no instance owned the partition, is skipped.
    func nextOccurrence(_ campaign: CampaignDefinition, last: Date?) -> Date? {
        guard case .schedule(let start, let every) = campaign.trigger else { return nil }
        let earliest = now.addingTimeInterval(-(campaign.expiresAfter ?? 3600))
        guard let every else { return last == nil && start >= earliest ? start : nil }
        var index = 0.0
        if let last, last >= start { index = ((last.timeIntervalSince(start)) / every).rounded(.down) + 1 }
        if start.addingTimeInterval(index * every) < earliest {
            index = max(index, (earliest.timeIntervalSince(start) / every).rounded(.up))
        }
        return start.addingTimeInterval(index * every)
    }

    /// Whether `date` is a run of the campaign's schedule (its start, or the start plus whole periods).
    func isOccurrence(_ campaign: CampaignDefinition, _ date: Date) -> Bool {
        guard case .schedule(let start, let every) = campaign.trigger, date >= start else { return false }
        guard let every else { return date == start }
        let periods = (date.timeIntervalSince(start) / every).rounded()
        return abs(start.addingTimeInterval(periods * every).timeIntervalSince(date)) < 0.001
    }

    /// Gives each enabled scheduled campaign (and journey's scheduled entry) the timer of its next run (a local-time
    /// one, its next day's preparation) and clears the timers of campaigns no longer scheduled.
    func reconcile() throws {
        let timers = TimersTable(db)
        let state = CampaignStateTable(db)
        let local = LocalTimeRuns(db: db, rules: rules, now: now)
        var scheduled: Set<String> = []
        for campaign in rules.scheduledCampaigns where campaign.enabled {
            if case .localSchedule(let schedule) = campaign.trigger {
                scheduled.insert(campaign.key)
                try local.setPreparation(campaign, schedule, after: try state.lastDay(campaign.key))
                continue
            }
            guard case .schedule = campaign.trigger else { continue }
            scheduled.insert(campaign.key)
            // A run being paged keeps its cursor, however long a rate limit spreads it, while its occurrence is one
            // of the campaign's schedule (its timer is due at the occurrence, or at its next page's slot).
            let current = try timers.campaignTimer(.schedule, ref: campaign.key)
            if let paging = current?.payload?["occurrence"]?.timeValue, isOccurrence(campaign, paging) {
                continue
            }
            if let next = nextOccurrence(campaign, last: try state.lastOccurrence(campaign.key)) {
                if WireTime.same(current?.due, next) { continue }
                try timers.set(key: "", kind: .schedule, ref: campaign.key, due: next)
            } else {
                try timers.deleteCampaignTimer(.schedule, ref: campaign.key)
            }
        }
        for ref in try timers.campaignTimerRefs(.schedule) where !scheduled.contains(ref) {
            try timers.deleteCampaignTimer(.schedule, ref: ref)
        }
    }
}
