import Foundation
import GRDB
import PartitionStore
import Shared

/// Durable timers (`timers`: a segment's next time flip, a campaign's delay, a send held by quiet hours, a schedule's
/// next run), the partition's
/// catch-up with a new configuration, and backfills.
extension Engagement {
    /// Runs the timers due at `now`, oldest first, at most `limit`; returns how many ran.
    mutating func runDueTimers(limit: Int) throws -> Int {
        let rows = try Row.fetchAll(
            db.cachedStatement(
                sql: "SELECT profile_key, kind, ref, due_at, payload FROM timers WHERE due_at <= ? ORDER BY due_at LIMIT ?"),
            arguments: [WireTime.format(now), limit])
        for row in rows {
            let key: String = row["profile_key"]
            let kind: String = row["kind"]
            let ref: String = row["ref"]
            let due: String = row["due_at"]
            let payload = (row["payload"] as String?).flatMap { try? JSONParser.parse(Array($0.utf8)) }
            try db.executeCached(
                sql: "DELETE FROM timers WHERE profile_key = ? AND kind = ? AND ref = ?", arguments: [key, kind, ref])
            switch kind {
            case "segment":
                guard let segment = rules.segmentsByProject[ProfileKey.project(of: key)]?.first(where: { $0.key == ref }) else { continue }
                let values = values(key)
                guard values.exists else { continue }
                // Read after the timer's row was deleted: a next flip is written again.
                try evaluate(segment, values: values, cause: "at \(due)", fireCampaigns: true, stored: try StoredMembership(db, key: key))
            case "delay", "quiet":
                // A delay's end, or the end of the quiet hours that held the send: decided now (expiry, audience,
                // eligibility and quiet hours again).
                let campaignKey = String(ref.prefix { $0 != " " })
                guard let campaign = rules.config.campaigns[campaignKey], let payload, let context = TriggerContext(json: payload)
                else { continue }
                try decide(campaign, key: key, context)
            case "schedule":
                guard let campaign = rules.config.campaigns[ref] else { continue }
                if case .localSchedule(let schedule) = campaign.trigger {
                    guard let day = payload?["day"]?.stringValue.flatMap(LocalDay.init) else { continue }
                    try prepareLocalRun(campaign, schedule, day: day, after: payload?["after"]?.stringValue, due: due)
                    continue
                }
                guard let at = WireTime.parse(due) else { continue }
                let occurrence = payload?["occurrence"]?.stringValue.flatMap(WireTime.parse) ?? at
                try runSchedule(campaign, occurrence: occurrence, at: at, after: payload?["after"]?.stringValue)
            case "local":
                try releaseLocalRun(ref: ref, due: due)
            default: continue
            }
        }
        return rows.count
    }

    /// How many members of an audience one run of a scheduled campaign decides in one transaction.
    static let schedulePage = 2000

    /// Sends a scheduled campaign's occurrence to the members of its audience in this partition, one page of members
    /// (after `after`, in key order) per transaction, as of `at` (the occurrence, or the page's slot when the
    /// campaign's rate limit spreads the run: SendPacing.swift). While members are left, the timer is set again for
    /// the next page, due at once or at the pace's next slot, with the last key decided and the occurrence in its
    /// payload, so a restart goes on from there and a million members are never one transaction and one array. After
    /// the last page, sets the timer of the next occurrence.
    mutating func runSchedule(_ campaign: CampaignDefinition, occurrence: Date, at: Date, after: String? = nil) throws {
        guard let audience = campaign.audience else { return }
        let stamp = WireTime.format(occurrence)
        func again(_ due: Date, after: String?) throws {
            var payload = [JSONMember("occurrence", .string(stamp))]
            if let after { payload.append(JSONMember("after", .string(after))) }
            try setTimer(key: "", kind: "schedule", ref: campaign.key, due: due, payload: .object(payload))
        }
        let (page, waitUntil) = try pageAllowed(campaign)
        if let waitUntil { return try again(waitUntil, after: after) }
        let members = try String.fetchAll(
            db.cachedStatement(sql: """
                SELECT profile_key FROM segment_members WHERE segment_key = ? AND profile_key > ?
                ORDER BY profile_key LIMIT ?
                """),
            arguments: ["\(campaign.project)/\(audience)", after ?? "", page])
        for key in members {
            try trigger(campaign, key: key, TriggerContext(type: "schedule", occurrence: "schedule \(stamp)", at: at))
        }
        let paced = members.isEmpty ? nil : try pageDecided(campaign)
        if members.count == page, let last = members.last { return try again(paced ?? occurrence, after: last) }
        try recordRun(campaign, stamp)
        if let next = nextOccurrence(campaign, last: occurrence) {
            try setTimer(key: "", kind: "schedule", ref: campaign.key, due: next)
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

    /// A scheduled campaign's last finished run as recorded: its instant, or a local-time schedule's day.
    func lastRun(_ campaign: CampaignDefinition) throws -> String? {
        try String.fetchOne(db, sql: "SELECT last_occurrence FROM campaign_state WHERE campaign_key = ?", arguments: [campaign.key])
    }

    func recordRun(_ campaign: CampaignDefinition, _ occurrence: String) throws {
        try db.executeCached(
            sql: """
                INSERT INTO campaign_state (campaign_key, last_occurrence) VALUES (?, ?)
                ON CONFLICT (campaign_key) DO UPDATE SET last_occurrence = excluded.last_occurrence
                """, arguments: [campaign.key, occurrence])
    }

    /// A scheduled campaign's timer (its next run, or the run being paged): when it is due and its payload.
    func scheduleTimer(_ ref: String) throws -> (due: String, payload: JSONValue?)? {
        try Row.fetchOne(
            db, sql: "SELECT due_at, payload FROM timers WHERE profile_key = '' AND kind = 'schedule' AND ref = ?", arguments: [ref]
        ).map { ($0["due_at"], ($0["payload"] as String?).flatMap { try? JSONParser.parse(Array($0.utf8)) }) }
    }

    func clearScheduleTimer(_ ref: String) throws {
        try db.execute(sql: "DELETE FROM timers WHERE profile_key = '' AND kind = 'schedule' AND ref = ?", arguments: [ref])
    }

    /// Whether `date` is a run of the campaign's schedule (its start, or the start plus whole periods).
    func isOccurrence(_ campaign: CampaignDefinition, _ date: Date) -> Bool {
        guard case .schedule(let start, let every) = campaign.trigger, date >= start else { return false }
        guard let every else { return date == start }
        let periods = (date.timeIntervalSince(start) / every).rounded()
        return abs(start.addingTimeInterval(periods * every).timeIntervalSince(date)) < 0.001
    }

    /// Brings the partition's stored state in line with the rules: membership of segments that are gone or whose
    /// condition changed is forgotten, and each enabled scheduled campaign has its next run's timer. Returns the keys
    /// of the segments to backfill (new or changed).
    mutating func reconcile() throws -> [String] {
        var stored: [String: String] = [:]
        for row in try Row.fetchAll(db, sql: "SELECT segment_key, condition FROM segment_state") {
            stored[row["segment_key"]] = row["condition"]
        }
        let current = Dictionary(uniqueKeysWithValues: rules.config.segments.values.map { ($0.key, $0.conditionText) })
        for (key, condition) in stored where current[key] != condition {
            try db.execute(sql: "DELETE FROM segment_members WHERE segment_key = ?", arguments: [key])
            try db.execute(sql: "DELETE FROM timers WHERE kind = 'segment' AND ref = ?", arguments: [key])
            try db.execute(sql: "DELETE FROM segment_state WHERE segment_key = ?", arguments: [key])
        }
        // Segments evaluated by writes before their backfill finished keep that membership; the backfill redoes them.
        let pending = current.filter { stored[$0.key] != $0.value }.keys.sorted()

        var scheduled: Set<String> = []
        for campaign in rules.config.campaigns.values.sorted(by: { $0.key < $1.key }) where campaign.enabled {
            if case .localSchedule(let schedule) = campaign.trigger {
                scheduled.insert(campaign.key)
                try setLocalPreparation(campaign, schedule, after: try lastRun(campaign).flatMap(LocalDay.init))
                continue
            }
            guard case .schedule = campaign.trigger else { continue }
            scheduled.insert(campaign.key)
            // A run being paged keeps its cursor, however long a rate limit spreads it, while its occurrence is one
            // of the campaign's schedule (its timer is due at the occurrence, or at its next page's slot).
            let current = try scheduleTimer(campaign.key)
            if let paging = current?.payload?["occurrence"]?.stringValue.flatMap(WireTime.parse), isOccurrence(campaign, paging) {
                continue
            }
            if let next = nextOccurrence(campaign, last: try lastRun(campaign).flatMap(WireTime.parse)) {
                if current?.due == WireTime.format(next) { continue }
                try setTimer(key: "", kind: "schedule", ref: campaign.key, due: next)
            } else {
                try clearScheduleTimer(campaign.key)
            }
        }
        for ref in try String.fetchAll(db, sql: "SELECT ref FROM timers WHERE profile_key = '' AND kind = 'schedule'")
        where !scheduled.contains(ref) {
            try clearScheduleTimer(ref)
        }
        return pending
    }

    /// Evaluates `segmentKey` for up to `limit` profiles of its project after `after` (key order), without firing
    /// entry campaigns (a new segment's members did not just *enter* it). Returns the last key done (nil: finished)
    /// and how many were evaluated. When finished, the segment's condition is recorded as backfilled.
    mutating func backfill(segmentKey: String, after: String?, limit: Int) throws -> (last: String?, evaluated: Int) {
        guard let segment = rules.segmentsByProject[ProfileKey.project(of: segmentKey)]?.first(where: { $0.key == segmentKey }) else {
            return (nil, 0)
        }
        let project = segment.definition.project
        // The chunk's rows are read in a few range scans (profiles, their attributes, this segment's memberships and
        // timers), not four lookups per profile: a backfill is a scan.
        let profiles = try Row.fetchAll(
            db.cachedStatement(
                sql: "SELECT * FROM profiles WHERE profile_key > ? AND profile_key < ? ORDER BY profile_key LIMIT ?"),
            arguments: [after ?? "\(project)/", "\(project)0", limit])
        let keys = profiles.map { $0["profile_key"] as String }
        if let first = keys.first, let last = keys.last {
            let range: StatementArguments = [segmentKey, first, last]
            let members = Set(
                try String.fetchAll(
                    db.cachedStatement(
                        sql: "SELECT profile_key FROM segment_members WHERE segment_key = ? AND profile_key BETWEEN ? AND ?"),
                    arguments: range))
            var timers: [String: String] = [:]
            for row in try Row.fetchAll(
                db.cachedStatement(
                    sql: """
                        SELECT profile_key, due_at FROM timers
                        WHERE kind = 'segment' AND ref = ? AND profile_key BETWEEN ? AND ?
                        """),
                arguments: range)
            {
                timers[row[0]] = row[1]
            }
            var attributes: [String: [String: (type: String, value: String)]] = [:]
            let readsAttributes = segment.dependencies.contains { $0.hasPrefix("c.") }
            if readsAttributes {
                for row in try Row.fetchAll(
                    db.cachedStatement(
                        sql: "SELECT profile_key, name, type, value FROM profile_attributes WHERE profile_key BETWEEN ? AND ?"),
                    arguments: [first, last])
                {
                    attributes[row[0], default: [:]][row[1]] = (row[2], row[3])
                }
            }
            for (key, profile) in zip(keys, profiles) {
                var stored = StoredMembership()
                if members.contains(key) { stored.segments.insert(segmentKey) }
                stored.timers[segmentKey] = timers[key]
                try evaluate(
                    segment, values: ProfileValues(
                        db: db, key: key, defaultTimeZone: rules.config.defaultTimeZone(project: project), profile: profile,
                        attributes: readsAttributes ? attributes[key] ?? [:] : nil),
                    cause: "backfill", fireCampaigns: false, stored: stored)
            }
        }
        if keys.count < limit {
            try db.execute(
                sql: """
                    INSERT INTO segment_state (segment_key, condition, backfilled_at) VALUES (?, ?, ?)
                    ON CONFLICT (segment_key) DO UPDATE SET condition = excluded.condition, backfilled_at = excluded.backfilled_at
                    """, arguments: [segmentKey, segment.definition.conditionText, WireTime.format(now)])
            return (nil, keys.count)
        }
        return (keys.last, keys.count)
    }
}
