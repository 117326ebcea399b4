import Foundation
import GRDB
import HeraldTestSupport
import Shared
import Testing

@testable import OrchestratorDomain
@testable import PartitionStore

/// A publisher that acknowledges and forgets (the benchmark counts what the relay would produce).
final class DiscardingPublisher: OutboxPublisher {
    let produced = Locked<Int>(0)

    func publish(_ batch: [KafkaOutgoingRecord]) async throws -> [KafkaDeliveryReport] {
        produced.withLock { count in
            defer { count += batch.count }
            return batch.enumerated().map { index, record in
                KafkaDeliveryReport(topic: record.topic, partition: record.partition ?? 0, offset: Int64(count + index))
            }
        }
    }
}

/// Not a test: the local-time figures for scripts/bench/local-time (runs only with HERALD_BENCH=1, in release).
///
/// The profiles are spread over the partitions of one orchestrator (HERALD_BENCH_PARTITIONS, default 12 as
/// HERALD_TOPIC_PARTITIONS) and over 40 time zones (three in four with their own `$timezone`, the others through their
/// installation), all in the audience of a campaign at 09:00 local time. The clock is injected: set to the
/// preparation's instant (timed until every partition has prepared), then, for each zone, it runs from the first of
/// the zone's release timers (due ahead of its 09:00: `LocalTimeRuns.releaseAhead`) as fast as the wall clock, every
/// partition running its due timers at once as the orchestrator's ticker does, until the zone's last send request is
/// produced (the relay's work included, to a publisher that acknowledges at once). The zone is late by the time that
/// moment (plus the real ticker's 100 ms period) comes after its 09:00; its sends are held by the notifier until
/// 09:00, so being ready earlier is not being early.
@Suite("Local-time schedule benchmark", .enabled(if: ProcessInfo.processInfo.environment["HERALD_BENCH"] != nil), .serialized)
struct LocalScheduleBenchmark {
    static let profiles = Int(ProcessInfo.processInfo.environment["HERALD_BENCH_PROFILES"] ?? "") ?? 1_000_000
    static let partitions = Int(ProcessInfo.processInfo.environment["HERALD_BENCH_PARTITIONS"] ?? "") ?? 12
    static let tickerPeriod = 0.1

    /// 40 zones from UTC−11 to UTC+14 (on 2026-12-01: southern summer time in Adelaide, Sydney and Auckland).
    static let zones = [
        "Pacific/Pago_Pago", "Pacific/Honolulu", "Pacific/Marquesas", "America/Anchorage", "America/Los_Angeles",
        "America/Denver", "America/Phoenix", "America/Chicago", "America/Mexico_City", "America/New_York", "America/Bogota",
        "America/Halifax", "America/Caracas", "America/St_Johns", "America/Sao_Paulo", "America/Argentina/Buenos_Aires",
        "Atlantic/South_Georgia", "Atlantic/Azores", "UTC", "Europe/London", "Europe/Paris", "Europe/Athens",
        "Africa/Johannesburg", "Europe/Moscow", "Asia/Tehran", "Asia/Dubai", "Asia/Kabul", "Asia/Karachi", "Asia/Kolkata",
        "Asia/Kathmandu", "Asia/Dhaka", "Asia/Yangon", "Asia/Bangkok", "Asia/Shanghai", "Australia/Eucla", "Asia/Tokyo",
        "Australia/Adelaide", "Australia/Sydney", "Pacific/Auckland", "Pacific/Kiritimati",
    ]

    /// Every partition runs its due timers, then its relay, until none is due: what the ticker does while `tick`
    /// reports work left, the partitions at once.
    static func drain(_ databases: [PartitionDatabase], rules: EngagementRules, publisher: DiscardingPublisher) async throws {
        try await withThrowingTaskGroup(of: Void.self) { group in
            for database in databases {
                group.addTask {
                    while try await OrchestratorPartition(database).runTimers(rules: rules).ran > 0 {
                        try await database.produceOutbox(with: publisher)
                    }
                    try await database.produceOutbox(with: publisher)
                }
            }
            try await group.waitForAll()
        }
    }

    /// The partition of profile `index`: consecutive profiles of a zone go to consecutive partitions, so that each zone
    /// is spread over all of them (as a hash of the profile key spreads it).
    static func partition(of index: Int) -> Int { (index / zones.count) % partitions }

    /// The profiles of a partition, their memberships and (one in four) their zone through an
    /// installation, written straight in without the changelog's capture; then the database opened as the
    /// orchestrator opens it (every row change captured for the changelog, produced by the relay).
    static func fill(partition: Int, config: HeraldConfiguration, rules: EngagementRules) async throws -> PartitionDatabase {
        let directory = temporaryDirectory()
        let filling = try PartitionDatabase.open(directory: directory, partition: Int32(partition), migrator: OrchestratorSchema.migrator)
        _ = try await OrchestratorPartition(filling).reconcile(rules: rules)
        let segment = try #require(config.segments["demo/members"])
        try await filling.write { db in
            try db.execute(
                sql: "INSERT INTO segment_state (segment_key, condition, backfilled_at) VALUES (?, ?, ?)",
                arguments: [segment.key, segment.conditionText, WireTime.format(t0)])
        }
        let mine = (0..<profiles).filter { Self.partition(of: $0) == partition }
        for chunk in stride(from: 0, to: mine.count, by: 50_000) {
            let indices = mine[chunk..<min(chunk + 50_000, mine.count)]
            try await filling.write { db in
                let time = WireTime.format(t0)
                for index in indices {
                    let key = "demo/user-\(index)"
                    let zone = zones[index % zones.count]
                    let own = index % 4 != 3
                    try db.execute(
                        sql: "INSERT INTO profiles (profile_key, project, custom_id, timezone, created_at, updated_at) VALUES (?, 'demo', ?, ?, ?, ?)",
                        arguments: [key, "user-\(index)", own ? zone : nil, time, time])
                    try db.execute(
                        sql: "INSERT INTO segment_members (segment_key, profile_key, since) VALUES (?, ?, ?)",
                        arguments: [segment.key, key, time])
                    if !own {
                        try db.execute(
                            sql: """
                                INSERT INTO installations (profile_key, installation_id, project, app, token, environment, notification_permission, timezone, install_date, last_visit_at, updated_at)
                                VALUES (?, ?, 'demo', 'ios', ?, 'production', 'granted', ?, ?, ?, ?)
                                """,
                            arguments: [key, "i-\(index)", "token-\(index)", zone, time, time, time])
                    }
                }
            }
        }
        try filling.close()
        let database = try PartitionDatabase.open(
            directory: directory, partition: Int32(partition), migrator: OrchestratorSchema.migrator, changelog: "herald.state.orchestrator")
        try await database.startWriting(at: 0, snapshot: false)
        return database
    }

    static func count(_ databases: [PartitionDatabase], _ sql: String) async throws -> Int {
        var total = 0
        for database in databases { total += try await database.read { db in try Int.fetchOne(db, sql: sql) ?? 0 } }
        return total
    }

    @Test("a 09:00 local-time broadcast over 40 time zones: time to schedule, lateness per zone")
    func localTime() async throws {
        let config = try configuration(
            #"{"kind":"project","id":"demo","timezone":"UTC"}"#,
            #"{"kind":"segment","id":"members","project":"demo","condition":"c.member = true"}"#,
            #"{"kind":"template","id":"hi","project":"demo","channel":"push","variants":{"default":{"title":"Good morning","body":"Today's offers"}}}"#,
            #"{"kind":"campaign","id":"morning","project":"demo","type":"marketing","trigger":{"schedule":{"at":"09:00","timezone":"local","on":"2026-12-01"}},"audience":"members","messages":[{"channel":"push","template":"hi"}]}"#)
        guard case .localSchedule(let schedule) = try #require(config.campaigns["demo/morning"]).trigger else {
            Issue.record("not a local-time schedule")
            return
        }
        let prepareAt = schedule.earliest(schedule.firstDay) - LocalTimeRuns.lead
        let clock = TestClock(prepareAt - 86_400)
        let rules = EngagementRules(config: config, clock: { clock.now }, partitions: Self.partitions)
        let fillStart = ContinuousClock.now
        var databases: [PartitionDatabase] = []
        for partition in 0..<Self.partitions { databases.append(try await Self.fill(partition: partition, config: config, rules: rules)) }
        let fillSeconds = (ContinuousClock.now - fillStart).timeInterval
        let publisher = DiscardingPublisher()

        // Scheduling: from the preparation's instant until every member has its instant (and each instant its timer).
        clock.set(prepareAt)
        let scheduleStart = ContinuousClock.now
        try await Self.drain(databases, rules: rules, publisher: publisher)
        let scheduleSeconds = (ContinuousClock.now - scheduleStart).timeInterval
        let rows = try await Self.count(databases, "SELECT count(*) FROM local_sends")
        let members = try await Self.count(databases, "SELECT sum(json_array_length(profile_keys)) FROM local_sends")
        let timers = try await Self.count(databases, "SELECT count(*) FROM timers WHERE kind = 'local'")
        #expect(members == Self.profiles)

        // Each zone's 09:00 in turn: from its first release timer, the clock runs with the wall clock until the zone's
        // last send request is produced.
        var instants: [Date: [String]] = [:]
        for zone in Self.zones { instants[schedule.instant(schedule.firstDay, in: TimeZones.named(zone)), default: []].append(zone) }
        var lateness: [(zone: String, instant: Date, seconds: Double, release: Double)] = []
        let sentBefore = publisher.produced.withLock { $0 }
        for instant in instants.keys.sorted() {
            let stamp = WireTime.format(instant)
            var first = instant
            for database in databases {
                let due = try await database.read { db in
                    try String.fetchOne(
                        db, sql: "SELECT min(due_at) FROM timers WHERE profile_key = '' AND kind = 'local' AND ref = ?",
                        arguments: ["demo/morning \(stamp)"])
                }
                first = min(first, due.flatMap(WireTime.parse) ?? first)
            }
            let start = ContinuousClock.now
            func elapsed() -> Double { (ContinuousClock.now - start).timeInterval }
            while true {
                clock.set(first + elapsed())
                try await Self.drain(databases, rules: rules, publisher: publisher)
                let left = try await Self.count(
                    databases, "SELECT count(*) FROM local_sends WHERE due_at = '\(stamp)'")
                if left == 0 { break }
                try await Task.sleep(for: .milliseconds(5))
            }
            let ready = first + elapsed() + Self.tickerPeriod
            for zone in instants[instant]! {
                lateness.append((zone, instant, max(0, ready.timeIntervalSince(instant)), ready.timeIntervalSince(first)))
            }
        }
        let sends = try await Self.count(databases, "SELECT count(*) FROM campaign_history WHERE campaign_key = 'demo/morning'")
        let left = try await Self.count(databases, "SELECT count(*) FROM local_sends")
        #expect(sends == Self.profiles && left == 0)
        for database in databases { try database.close() }

        let worst = lateness.max { $0.seconds < $1.seconds }!
        let median = lateness.map(\.seconds).sorted()[lateness.count / 2]
        let longest = lateness.max { $0.release < $1.release }!
        print(
            """
            local-time benchmark (\(ProcessInfo.processInfo.activeProcessorCount) cores, \(Self.partitions) partitions, \(Self.profiles) profiles over \(Self.zones.count) zones, \(instants.count) distinct instants; filling took \(String(format: "%.0f", fillSeconds)) s)
              scheduled in            \(String(format: "%.2f", scheduleSeconds)) s   (\(Int(Double(Self.profiles) / scheduleSeconds)) members/s; \(members) members in \(rows) rows, \(timers) timers)
              released                \(sends) members, \(publisher.produced.withLock { $0 } - sentBefore) records produced (send requests and changelog)
              per zone: the release (its first timer to its last send request produced, + \(Self.tickerPeriod) s ticker period), and how late that is after 09:00
            """)
        for entry in lateness.sorted(by: { $0.instant < $1.instant }) {
            print("    \(entry.zone.padding(toLength: 32, withPad: " ", startingAt: 0)) 09:00 = \(WireTime.format(entry.instant))  release \(String(format: "%.3f", entry.release)) s, late \(String(format: "%.3f", entry.seconds)) s")
        }
        print("  lateness median \(String(format: "%.3f", median)) s, worst \(String(format: "%.3f", worst.seconds)) s (\(worst.zone)); longest release \(String(format: "%.3f", longest.release)) s (\(longest.zone))")
        printFigure("local_time_schedule_seconds_\(Self.profiles)", scheduleSeconds, unit: "s", goal: "<10_at_1M")
        printFigure("local_time_lateness_worst_zone", worst.seconds, unit: "s", goal: "<1")
        printFigure("local_time_lateness_median_zone", median, unit: "s", goal: "<1")
        printFigure("local_time_release_seconds_longest_zone", longest.release, unit: "s", goal: "-")
    }
}
