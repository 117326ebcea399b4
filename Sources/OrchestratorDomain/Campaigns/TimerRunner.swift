import Foundation
import GRDB
import PartitionStore
import Shared

/// Runs the partition's durable timers that are due (`timers`), oldest first: a segment's time flip, a campaign's delay
/// or quiet-hour hold ending, a schedule's run or page, a local-time release. One branch per `TimerKind`.
struct TimerRunner {
    let db: Database
    let rules: EngagementRules
    let now: Date
    /// The campaigns' decisions of the timers run (their outputs go to the outbox).
    private(set) var decider: CampaignDecider

    init(db: Database, rules: EngagementRules, now: Date) {
        self.db = db
        self.rules = rules
        self.now = now
        decider = CampaignDecider(db: db, rules: rules, now: now)
    }

    /// Runs the timers due at `now`, at most `limit`; returns how many ran. Each is deleted first: a timer that sets
    /// itself again (a paged run) is written anew.
    mutating func runDue(limit: Int) throws -> Int {
        let timers = TimersTable(db)
        let due = try timers.due(at: now, limit: limit)
        for timer in due {
            try timers.delete(timer)
            // A kind a later version wrote: deleted, not run.
            guard let kind = timer.kind else { continue }
            try run(timer, kind)
        }
        return due.count
    }

    private mutating func run(_ timer: DurableTimer, _ kind: TimerKind) throws {
        switch kind {
        case .segment:
            guard let segment = rules.segment(timer.ref) else { return }
            let transition = try SegmentEvaluator(db: db, rules: rules, now: now)
                .timeFlip(key: timer.profileKey, segment: segment, cause: "at \(wire: timer.due)")
            try decider.segmentsChanged(transition.map { [$0] } ?? [])
        case .delay, .quiet:
            // A delay's end, or the end of the quiet hours that held the send: decided now (expiry, audience,
            // eligibility and quiet hours again).
            let campaignKey = String(timer.ref.prefix { $0 != " " })
            guard let campaign = rules.campaign(campaignKey), let payload = timer.payload,
                let context = TriggerContext(json: payload)
            else { return }
            try decider.decide(campaign, key: timer.profileKey, context)
        case .schedule:
            guard let campaign = rules.scheduled(timer.ref) else { return }
            let payload = timer.payload
            if case .localSchedule(let schedule) = campaign.trigger {
                guard let day = payload?["day"]?.stringValue.flatMap(LocalDay.init) else { return }
                try LocalTimeRuns(db: db, rules: rules, now: now)
                    .prepare(campaign, schedule, day: day, after: payload?["after"]?.stringValue, due: timer.due)
                return
            }
            let at = timer.due
            let occurrence = payload?["occurrence"]?.timeValue ?? at
            try ScheduledRuns(db: db, rules: rules, now: now)
                .run(campaign, occurrence: occurrence, at: at, after: payload?["after"]?.stringValue, &decider)
        case .local:
            try LocalTimeRuns(db: db, rules: rules, now: now).release(ref: timer.ref, due: timer.due, &decider)
        case .journey:
            try JourneySteps(db: db, rules: rules, now: now).timerDue(timer, &decider)
        case .uninstall:
            if let probe = try UninstallTracking(db: db, config: rules.config).probe(key: timer.profileKey, installationID: timer.ref, now: now) {
                decider.output(probe)
            }
        }
    }
}
