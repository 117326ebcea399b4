import Foundation
import GRDB
import PartitionStore
import Shared

/// What a durable timer does when it is due (`timers.kind`). Adding a kind is a case here and the branch the compiler
/// then asks for in `TimerRunner.run(_:)`.
enum TimerKind: String, Sendable, CaseIterable {
    /// A profile's next segment time flip (`ref`: the segment key).
    case segment
    /// A campaign's delay (`ref`: `<campaign key> <occurrence>`, payload: the trigger).
    case delay
    /// A send held by the recipient's quiet hours until they end (`ref` and payload as a delay's).
    case quiet
    /// A scheduled campaign's next run, or the run being paged (`ref`: the campaign key, profile key empty).
    case schedule
    /// The release of a local-time run's members at one instant (`ref`: `<campaign key> <instant>`, profile key empty).
    case local
    /// An installation's daily uninstall-tracking push (`ref`: the installation id).
    case uninstall
    /// A journey instance's delay or wait timeout ending (`ref`: `<journey key> <node> <entry id>`).
    case journey

    /// The kind as an SQL literal, for the statements' text rather than a bound parameter: `timers_held` is a partial
    /// index (`WHERE kind = 'quiet'`), and SQLite re-prepares a statement at every run when a bound parameter decides
    /// whether such an index applies (8.2 µs against 2.1 µs for the segment timers' read, measured on this machine).
    /// Each kind gets its own cached statement. The raw values are fixed lower-case words (`TimerStatementsTests`).
    var literal: String { "'\(rawValue)'" }
}

/// One row of `timers`.
struct DurableTimer {
    /// The profile the timer is for; empty for a campaign's own timers (`schedule`, `local`).
    var profileKey: String
    /// As stored: a kind a later version wrote may be unknown here.
    var storedKind: String
    var ref: String
    var due: Date
    var payload: JSONValue?

    /// nil: a kind this build does not know (the runner deletes it).
    var kind: TimerKind? { TimerKind(rawValue: storedKind) }
}

/// `timers`: durable timers, one per profile, kind and ref, due at a time (segment flips, campaign delays, quiet hours,
/// schedules, local-time releases). Read by `TimerRunner` when due.
struct TimersTable {
    let db: Database

    init(_ db: Database) { self.db = db }

    /// Whether the timer is set.
    func exists(key: String, kind: TimerKind, ref: String) throws -> Bool {
        try Bool.fetchOne(
            db.cachedStatement(sql: "SELECT EXISTS (SELECT 1 FROM timers WHERE profile_key = ? AND kind = \(kind.literal) AND ref = ?)"),
            arguments: [key, ref]) ?? false
    }

    /// Sets (or moves) a timer.
    func set(key: String, kind: TimerKind, ref: String, due: Date, payload: JSONValue? = nil) throws {
        try db.executeCached(
            sql: """
                INSERT INTO timers (profile_key, kind, ref, due_at, payload) VALUES (?, ?, ?, ?, ?)
                ON CONFLICT (profile_key, kind, ref) DO UPDATE SET due_at = excluded.due_at, payload = excluded.payload
                """,
            arguments: [key, kind.rawValue, ref, WireTime.format(due), payload.map { String(decoding: $0.serialized, as: UTF8.self) }])
    }

    func delete(key: String, kind: TimerKind, ref: String) throws {
        try db.executeCached(
            sql: "DELETE FROM timers WHERE profile_key = ? AND kind = \(kind.literal) AND ref = ?", arguments: [key, ref])
    }

    /// Every timer of a profile (it is gone).
    func deleteAll(key: String) throws {
        try db.executeCached(sql: "DELETE FROM timers WHERE profile_key = ?", arguments: [key])
    }

    /// Whether any timer is due at `due` (a read: most ticks find nothing).
    func anyDue(at due: Date) throws -> Bool {
        try Bool.fetchOne(db.cachedStatement(sql: "SELECT 1 FROM timers WHERE due_at <= ? LIMIT 1"), arguments: [WireTime.format(due)]) ?? false
    }

    /// The temporary triggers by which every timer set or moved lowers the partition's `DueHints`
    /// (`OrchestratorPartition.watchTimers`).
    static let dueTriggers = """
        CREATE TEMP TRIGGER IF NOT EXISTS timer_due_insert AFTER INSERT ON main.timers
        BEGIN SELECT herald_due('\(OrchestratorPartition.timersDue)', NEW.due_at); END;
        CREATE TEMP TRIGGER IF NOT EXISTS timer_due_update AFTER UPDATE OF due_at ON main.timers
        BEGIN SELECT herald_due('\(OrchestratorPartition.timersDue)', NEW.due_at); END;
        """

    /// When the earliest timer is due (nil: none).
    func nextDue() throws -> Date? {
        try Row.fetchOne(db.cachedStatement(sql: "SELECT min(due_at) AS next FROM timers"))?.time("next")
    }

    /// The sends held by quiet hours, and when the first of them goes (`timers_held`, a partial index: a count over
    /// the held ones only).
    func held() throws -> (count: Int, next: Date?) {
        let row = try Row.fetchOne(db, sql: "SELECT count(*) AS count, min(due_at) AS next FROM timers WHERE kind = 'quiet'")
        return (row?["count"] ?? 0, try row?.time("next"))
    }

    /// The timers due at `now`, oldest first, at most `limit`.
    func due(at now: Date, limit: Int) throws -> [DurableTimer] {
        try Row.fetchAll(
            db.cachedStatement(
                sql: "SELECT profile_key, kind, ref, due_at, payload FROM timers WHERE due_at <= ? ORDER BY due_at LIMIT ?"),
            arguments: [WireTime.format(now), limit]
        ).map { row in
            DurableTimer(
                profileKey: row["profile_key"], storedKind: row["kind"], ref: row["ref"], due: try row.requiredTime("due_at"),
                payload: (row["payload"] as String?).flatMap { try? JSONParser.parse(Array($0.utf8)) })
        }
    }

    /// Deletes a timer as `due` returned it (whatever its kind).
    func delete(_ timer: DurableTimer) throws {
        if let kind = timer.kind { return try delete(key: timer.profileKey, kind: kind, ref: timer.ref) }
        try db.executeCached(
            sql: "DELETE FROM timers WHERE profile_key = ? AND kind = ? AND ref = ?",
            arguments: [timer.profileKey, timer.storedKind, timer.ref])
    }

    // MARK: Segment flips

    /// A profile's segment timers: segment key → due time.
    func segmentTimers(key: String) throws -> [String: Date] {
        var timers: [String: Date] = [:]
        for row in try Row.fetchAll(
            db.cachedStatement(sql: "SELECT ref, due_at FROM timers WHERE profile_key = ? AND kind = \(TimerKind.segment.literal)"),
            arguments: [key])
        {
            timers[row["ref"]] = try row.requiredTime("due_at")
        }
        return timers
    }

    /// One segment's timers of the profiles `first`…`last` (a backfill's range scan): profile key → due time.
    func segmentTimers(segment: String, from first: String, through last: String) throws -> [String: Date] {
        var timers: [String: Date] = [:]
        for row in try Row.fetchAll(
            db.cachedStatement(
                sql: """
                    SELECT profile_key, due_at FROM timers
                    WHERE kind = \(TimerKind.segment.literal) AND ref = ? AND profile_key BETWEEN ? AND ?
                    """),
            arguments: [segment, first, last])
        {
            timers[row["profile_key"]] = try row.requiredTime("due_at")
        }
        return timers
    }

    /// Every profile's timer of a segment (the segment changed or is gone).
    func deleteSegmentTimers(segment: String) throws {
        try db.execute(sql: "DELETE FROM timers WHERE kind = \(TimerKind.segment.literal) AND ref = ?", arguments: [segment])
    }

    // MARK: Campaign delays and quiet hours

    /// The refs of a campaign's waiting timers of a profile start with the campaign key and a space.
    private static func campaignRange(_ campaign: String) -> (from: String, before: String) { ("\(campaign) ", "\(campaign)!") }

    /// Deletes the profile's waiting delays and quiet-hour holds of `campaign`; returns how many.
    func cancelWaiting(key: String, campaign: String) throws -> Int {
        let range = Self.campaignRange(campaign)
        try db.executeCached(
            sql: """
                DELETE FROM timers WHERE profile_key = ? AND kind IN (\(TimerKind.delay.literal), \(TimerKind.quiet.literal))
                AND ref >= ? AND ref < ?
                """,
            arguments: [key, range.from, range.before])
        return db.changesCount
    }

    /// Whether a delay of `campaign` other than `ref` waits for the profile.
    func isDelayWaiting(key: String, campaign: String, except ref: String) throws -> Bool {
        let range = Self.campaignRange(campaign)
        return try Bool.fetchOne(
            db.cachedStatement(
                sql: """
                    SELECT 1 FROM timers WHERE profile_key = ? AND kind = \(TimerKind.delay.literal)
                    AND ref >= ? AND ref < ? AND ref != ? LIMIT 1
                    """),
            arguments: [key, range.from, range.before, ref]) ?? false
    }

    // MARK: A campaign's own timers (no profile)

    /// A campaign's own timer of `kind`: when it is due and its payload.
    func campaignTimer(_ kind: TimerKind, ref: String) throws -> (due: Date, payload: JSONValue?)? {
        try Row.fetchOne(
            db.cachedStatement(sql: "SELECT due_at, payload FROM timers WHERE profile_key = '' AND kind = \(kind.literal) AND ref = ?"),
            arguments: [ref]
        ).map { (try $0.requiredTime("due_at"), ($0["payload"] as String?).flatMap { try? JSONParser.parse(Array($0.utf8)) }) }
    }

    func deleteCampaignTimer(_ kind: TimerKind, ref: String) throws {
        try db.executeCached(
            sql: "DELETE FROM timers WHERE profile_key = '' AND kind = \(kind.literal) AND ref = ?", arguments: [ref])
    }

    /// The refs of every campaign timer of `kind`.
    func campaignTimerRefs(_ kind: TimerKind) throws -> [String] {
        try String.fetchAll(db, sql: "SELECT ref FROM timers WHERE profile_key = '' AND kind = \(kind.literal)")
    }
}
