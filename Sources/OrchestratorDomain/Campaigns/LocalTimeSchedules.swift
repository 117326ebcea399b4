import Foundation
import GRDB
import Logging
import PartitionStore
import Shared

/// Scheduled campaigns at a wall-clock time in each member's time zone (docs/campaigns.md, "Local-time schedules").
///
/// A run on a day is *prepared* an hour before the time first comes anywhere (UTC+14): the audience is read in pages
/// (in profile-key order, one transaction each, a cursor in the preparing timer), each member's time zone resolved
/// and the instant their time comes written to `local_sends`, with one `local` timer per distinct instant, not one per
/// member. Each such timer *releases* its members when it is due, a page per transaction, deleting the rows it decided.
extension Engagement {
    /// How long before the time first comes anywhere a day's run is prepared.
    static let localLead: TimeInterval = 3600

    /// The next day of a local-time schedule to prepare after `last` (nil: none yet). Days whose time has passed in
    /// every zone are skipped; a one-off whose day has is not run.
    func nextLocalDay(_ schedule: LocalSchedule, after last: LocalDay?) -> LocalDay? {
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
    func setLocalPreparation(_ campaign: CampaignDefinition, _ schedule: LocalSchedule, after last: LocalDay?) throws {
        guard let day = nextLocalDay(schedule, after: last) else {
            try db.execute(
                sql: "DELETE FROM timers WHERE profile_key = '' AND kind = 'schedule' AND ref = ?", arguments: [campaign.key])
            return
        }
        let due = WireTime.format(schedule.earliest(day).addingTimeInterval(-Self.localLead))
        // A day already set (or being prepared, with its cursor) is kept.
        let current = try String.fetchOne(
            db, sql: "SELECT payload FROM timers WHERE profile_key = '' AND kind = 'schedule' AND ref = ?", arguments: [campaign.key])
        if let payload = current.flatMap({ try? JSONParser.parse(Array($0.utf8)) }), payload["day"]?.stringValue == day.description {
            return
        }
        try setTimer(key: "", kind: "schedule", ref: campaign.key, due: due, payload: .object([JSONMember("day", .string(day.description))]))
    }

    /// Prepares one page of the day's run (members after `after`); after the last page, records the day and sets the
    /// next day's preparation.
    mutating func prepareLocalRun(
        _ campaign: CampaignDefinition, _ schedule: LocalSchedule, day: LocalDay, after: String?, due: String
    ) throws {
        guard let audience = campaign.audience else { return }
        let page = Self.schedulePage
        // Each member's time zone as ProfileValues resolves it (own, latest installation's, the project's), read for
        // the whole page in one statement.
        let rows = try Row.fetchAll(
            db.cachedStatement(sql: """
                SELECT m.profile_key, p.timezone, (
                    SELECT i.timezone FROM installations i WHERE i.profile_key = m.profile_key AND i.timezone IS NOT NULL
                    ORDER BY i.last_visit_at DESC, i.installation_id LIMIT 1) AS installation_timezone
                FROM segment_members m JOIN profiles p ON p.profile_key = m.profile_key
                WHERE m.segment_key = ? AND m.profile_key > ?
                ORDER BY m.profile_key LIMIT ?
                """),
            arguments: ["\(campaign.project)/\(audience)", after ?? "", page])
        let fallback = rules.config.defaultTimeZone(project: campaign.project)
        let occurrence = schedule.occurrence(day)
        var timers: Set<String> = []
        var missed = 0
        for row in rows {
            let key: String = row[0]
            let zone = TimeZones.named(schedule.zone ?? (row[1] as String?) ?? (row[2] as String?) ?? fallback)
            var at = schedule.instant(day, in: zone)
            if at <= now {
                guard schedule.everyDays == nil, schedule.missed == .next else {
                    missed += 1
                    continue
                }
                at = schedule.instant(day.adding(days: 1), in: zone)
            }
            let stamp = WireTime.format(at)
            try db.executeCached(
                sql: "INSERT OR IGNORE INTO local_sends (campaign_key, due_at, profile_key, occurrence) VALUES (?, ?, ?, ?)",
                arguments: [campaign.key, stamp, key, occurrence])
            if timers.insert(stamp).inserted {
                try db.executeCached(
                    sql: "INSERT OR IGNORE INTO timers (profile_key, kind, ref, due_at) VALUES ('', 'local', ?, ?)",
                    arguments: ["\(campaign.key) \(stamp)", stamp])
            }
        }
        if missed > 0 { count(campaign, "missed_local_time", by: missed) }
        let payload: [JSONMember] = [JSONMember("day", .string(day.description))]
        if rows.count == page, let last = rows.last?[0] as String? {
            try setTimer(
                key: "", kind: "schedule", ref: campaign.key, due: due, payload: .object(payload + [JSONMember("after", .string(last))]))
            return
        }
        try db.executeCached(
            sql: """
                INSERT INTO campaign_state (campaign_key, last_occurrence) VALUES (?, ?)
                ON CONFLICT (campaign_key) DO UPDATE SET last_occurrence = excluded.last_occurrence
                """, arguments: [campaign.key, day.description])
        try setLocalPreparation(campaign, schedule, after: day)
    }

    /// Releases one page of the members whose local time comes at the instant the timer's ref names (`<campaign>
    /// <instant>`): each is triggered as of the timer's due (the instant, or the page's slot when the campaign's rate
    /// limit spreads the release), and its row deleted in the same transaction. While rows are left, the timer is set
    /// again (due at once, or at the pace's next slot).
    mutating func releaseLocalRun(ref: String, due: String) throws {
        guard let space = ref.lastIndex(of: " ") else { return }
        let campaignKey = String(ref[..<space])
        let instant = String(ref[ref.index(after: space)...])
        let campaign = rules.config.campaigns[campaignKey]
        let (page, waitUntil) = try campaign.map(pageAllowed) ?? (Self.schedulePage, nil)
        if let waitUntil { return try setTimer(key: "", kind: "local", ref: ref, due: waitUntil) }
        let rows = try Row.fetchAll(
            db.cachedStatement(sql: """
                SELECT profile_key, occurrence FROM local_sends WHERE campaign_key = ? AND due_at = ?
                ORDER BY profile_key LIMIT ?
                """),
            arguments: [campaignKey, instant, page])
        guard let last = rows.last?["profile_key"] as String? else { return }
        var paced: Date?
        // A campaign removed meanwhile: its rows are dropped.
        if let campaign, let at = WireTime.parse(due) {
            for row in rows {
                try trigger(campaign, key: row["profile_key"], TriggerContext(type: "schedule", occurrence: row["occurrence"], at: at))
            }
            paced = try pageDecided(campaign)
        }
        try db.executeCached(
            sql: "DELETE FROM local_sends WHERE campaign_key = ? AND due_at = ? AND profile_key <= ?",
            arguments: [campaignKey, instant, last])
        if rows.count == page {
            try setTimer(key: "", kind: "local", ref: ref, due: paced.map(WireTime.format) ?? due)
        }
    }
}
