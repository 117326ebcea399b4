import Foundation
import GRDB
import Logging
import PartitionStore
import Shared

/// Scheduled campaigns at a wall-clock time in each member's time zone (docs/campaigns.md, "Local-time schedules").
///
/// A run on a day is *prepared* an hour before the time first comes anywhere (UTC+14): the audience is read in pages
/// (in profile-key order, one transaction each, a cursor in the preparing timer), each member's time zone resolved
/// and the page's members written to `local_sends` by the instant their time comes (a row per instant and page, not per
/// member: a million members over 33 instants is about 16,000 rows), with one `local` timer per distinct instant. Each
/// such timer *releases* its members when it is due, a page per transaction, shortening or deleting the rows it took.
struct LocalTimeRuns {
    let db: Database
    let rules: EngagementRules
    let now: Date

    /// How long before the time first comes anywhere a day's run is prepared.
    static let lead: TimeInterval = 3600
    /// How long before its instant a release starts (its sends decided ahead and held by the notifier until the instant,
    /// `not_before`), plus a second per `releaseAheadRate` members at that instant in the partition: so that a zone's
    /// sends are ready when its time comes. A rate-limited campaign starts at the instant (its spread is the point).
    static let releaseAhead: TimeInterval = 60
    static let releaseAheadRate = 1000.0

    /// The next day of a local-time schedule to prepare after `last` (nil: none yet). Days whose time has passed in
    /// every zone are skipped; a one-off whose day has is not run.
    func nextDay(_ schedule: LocalSchedule, after last: LocalDay?) -> LocalDay? {
        var day = schedule.firstDay
        if let last {
            guard let every = schedule.everyDays else { return nil }
            day = last.adding(days: every)
        }
        guard schedule.latest(day) < now else { return day }
        guard let every = schedule.everyDays else { return nil }
        let behind = Int((now.timeIntervalSince(schedule.latest(day)) / Double(every * 86_400)).rounded(.down))
        day = day.adding(days: behind * every)
        while schedule.latest(day) < now { day = day.adding(days: every) }
        return day
    }

    /// Sets the preparing timer of the schedule's next day after `last` (none when it has no next day).
    func setPreparation(_ campaign: CampaignDefinition, _ schedule: LocalSchedule, after last: LocalDay?) throws {
        let timers = TimersTable(db)
        guard let day = nextDay(schedule, after: last) else { return try timers.deleteCampaignTimer(.schedule, ref: campaign.key) }
        let due = schedule.earliest(day).addingTimeInterval(-Self.lead)
        // A day already set (or being prepared, with its cursor) is kept.
        if try timers.campaignTimer(.schedule, ref: campaign.key)?.payload?["day"]?.stringValue == day.description { return }
        try timers.set(
            key: "", kind: .schedule, ref: campaign.key, due: due, payload: .object([JSONMember("day", .string(day.description))]))
    }

    /// Prepares one page of the day's run (members after `after`); after the last page, records the day and sets the
    /// next day's preparation.
    func prepare(_ campaign: CampaignDefinition, _ schedule: LocalSchedule, day: LocalDay, after: String?, due: Date) throws {
        guard let audience = campaign.audience else { return }
        let page = ScheduledRuns.page
        let timers = TimersTable(db)
        var payload: [JSONMember] = [JSONMember("day", .string(day.description))]
        // Members are listed once the audience's backfill is done here: until then, the preparation waits for it
        // (a day marked prepared with its members not listed yet would be lost).
        if try SegmentBackfill(db: db, rules: rules, now: now).isBackfilling(audience: audience, of: campaign) {
            if let after { payload.append(JSONMember("after", .string(after))) }
            let retry = now.addingTimeInterval(SegmentBackfill.retry)
            return try timers.set(key: "", kind: .schedule, ref: campaign.key, due: retry, payload: .object(payload))
        }
        // Each member's time zone as ProfileValues resolves it (own, latest installation's, the project's), read for
        // the whole page in one statement.
        let rows = try SegmentMembersTable(db).pageWithTimeZones(segment: "\(campaign.project)/\(audience)", after: after, limit: page)
        let fallback = rules.config.defaultTimeZone(project: campaign.project)
        let occurrence = schedule.occurrence(day)
        // Each distinct zone's instant, once per page (nil: missed): a page holds a few dozen zones, and the zones'
        // cache and ICU's own are locks that twelve partitions preparing at once would contend for per member.
        var instantOf: [String: Date?] = [:]
        func zoneInstant(_ name: String) -> Date? {
            if let known = instantOf[name] { return known }
            let zone = TimeZones.named(name)
            var at: Date? = schedule.instant(day, in: zone)
            if let passed = at, passed <= now {
                at = schedule.everyDays == nil && schedule.missed == .next ? schedule.instant(day.adding(days: 1), in: zone) : nil
            }
            instantOf[name] = .some(at)
            return at
        }
        var byInstant: [Date: [String]] = [:]
        var missed = 0
        for row in rows {
            guard let at = zoneInstant(schedule.zone ?? row.timezone ?? row.installationTimezone ?? fallback) else {
                missed += 1
                continue
            }
            byInstant[at, default: []].append(row.key)
        }
        let sends = LocalSendsTable(db)
        for (instant, keys) in byInstant {
            guard try sends.insert(campaign: campaign.key, instant: instant, occurrence: occurrence, keys: keys[...]) else { continue }
            // The instant's release timer, earlier by this page's share of the time its members take to decide.
            let ref = LocalSendsTable.releaseRef(campaign: campaign.key, instant: instant)
            var due = instant
            if campaign.rateLimit == nil {
                let current = try timers.campaignTimer(.local, ref: ref)?.due
                due = (current ?? instant - Self.releaseAhead) - Double(keys.count) / Self.releaseAheadRate
            }
            try timers.set(key: "", kind: .local, ref: ref, due: due)
        }
        if missed > 0 { CampaignMetrics.decision(campaign, .missedLocalTime, by: missed) }
        if rows.count == page, let last = rows.last?.key {
            try timers.set(
                key: "", kind: .schedule, ref: campaign.key, due: due, payload: .object(payload + [JSONMember("after", .string(last))]))
            return
        }
        try CampaignStateTable(db).recordRun(campaign.key, day: day)
        Logger(label: "herald.campaigns").info(
            "local-time run prepared", metadata: ["campaign": "\(campaign.key)", "day": "\(day)"])
        try setPreparation(campaign, schedule, after: day)
    }

    /// Releases one page of the members whose local time comes at the instant the timer's ref names (`<campaign>
    /// <instant>`): each is triggered as of the instant (the timer is due ahead of it: `releaseAhead`), or of the page's
    /// slot when the campaign's rate limit spreads the release, and taken from its row (shortened, or deleted when
    /// empty) in the same transaction. While rows are left, the timer is set again (due at once, or at the pace's next
    /// slot).
    func release(ref: String, due: Date, _ decider: inout CampaignDecider) throws {
        guard let (campaignKey, instant) = LocalSendsTable.release(ref: ref) else { return }
        let campaign = rules.scheduled(campaignKey)
        let timers = TimersTable(db)
        let pacing = SendPacing(db: db, rules: rules, now: now)
        let (page, waitUntil) = try campaign.map(pacing.pageAllowed) ?? (ScheduledRuns.page, nil)
        if let waitUntil { return try timers.set(key: "", kind: .local, ref: ref, due: waitUntil) }
        // Each row holds at least one member: a page's worth of rows is enough.
        let sends = LocalSendsTable(db)
        let rows = try sends.rows(campaign: campaignKey, instant: instant, limit: page)
        // Decided as of the instant (ahead of it: the sends wait in the notifier), or of the page's slot in a spread.
        let at = campaign?.rateLimit == nil ? instant : due
        var taken = 0
        for row in rows where taken < page {
            let take = min(row.keys.count, page - taken)
            // A campaign removed meanwhile: its members are dropped.
            if let campaign {
                for key in row.keys.prefix(take) {
                    try decider.trigger(campaign, key: key, TriggerContext(type: .schedule, occurrence: row.occurrence, at: at))
                }
            }
            if take == row.keys.count {
                try sends.delete(campaign: campaignKey, instant: instant, firstKey: row.firstKey)
            } else {
                try sends.keep(campaign: campaignKey, instant: instant, firstKey: row.firstKey, keys: row.keys[take...])
            }
            taken += take
        }
        guard taken > 0 else { return }
        let paced = try campaign.flatMap(pacing.pageDecided)
        if taken == page {
            try timers.set(key: "", kind: .local, ref: ref, due: paced ?? due)
        }
    }
}
