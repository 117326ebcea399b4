import Foundation
import GRDB
import HeraldTestSupport
import Shared
import Testing

@testable import OrchestratorDomain
@testable import PartitionStore

/// Not a test: the journeys' figures for scripts/bench/journeys (runs only with HERALD_BENCH=1, in release).
///
/// **Timers**: N profiles (HERALD_BENCH_PROFILES, default 1,000,000) wait in a journey's one-hour delay, spread over the
/// partitions of one orchestrator (HERALD_BENCH_PARTITIONS, default 12), their ends due at HERALD_BENCH_RATE a second
/// (default 20,000). The instances, versions and timers are written straight in; the databases are then opened as the
/// orchestrator opens them (every row change captured for the changelog). The clock runs with the wall clock from the
/// first end; every partition runs its due timers and its relay at once, as the ticker does. Each transition leaves the
/// delay, decides a push (rendered, written to the outbox) and ends at the exit node. Its lateness is from its due time
/// to the end of the timer round that made it (the real ticker's 100 ms period is not added: the orchestrator's timers
/// wake it when one is due, `DueHints`).
///
/// **Ceiling**: the same partitions applying plain profile writes (no segment, campaign or journey), per second.
///
/// **Migration**: 10,000 profiles that have waited a day and a minute in a two-day wait; a version whose wait is one
/// day, with a migration map, is published: the time from the publish until every one of them has moved on.
@Suite("Journey benchmark", .enabled(if: ProcessInfo.processInfo.environment["HERALD_BENCH"] != nil), .serialized)
struct JourneyBenchmark {
    static let environment = ProcessInfo.processInfo.environment
    static let profiles = Int(environment["HERALD_BENCH_PROFILES"] ?? "") ?? 1_000_000
    static let partitions = Int(environment["HERALD_BENCH_PARTITIONS"] ?? "") ?? 12
    static let rate = Double(environment["HERALD_BENCH_RATE"] ?? "") ?? 20_000
    static let migrating = Int(environment["HERALD_BENCH_MIGRATING"] ?? "") ?? 10_000

    static let template = #"{"kind":"template","id":"hi","project":"demo","channel":"push","variants":{"default":{"title":"Hello","body":"Your offer is waiting"}}}"#

    static func journey(wait: String, migrate: String = "") -> String {
        #"""
        {"kind":"journey","id":"bench","project":"demo","entry":{"event":"signed_up"},"start":"wait"\#(migrate),
         "nodes":{"wait":\#(wait),
                  "hi":{"message":{"channel":"push","template":"hi"},"next":"done"},"done":{"exit":{}}}}
        """#
    }

    /// Profiles `indices` of one partition, each waiting at `wait` since `since(index)` with its timer due at
    /// `due(index)`, written straight in; then opened as the orchestrator opens it.
    static func fill(
        partition: Int, indices: [Int], journey: JourneyDefinition, rules: EngagementRules, since: @escaping @Sendable (Int) -> Date,
        due: @escaping @Sendable (Int) -> Date
    ) async throws -> PartitionDatabase {
        let directory = temporaryDirectory()
        let filling = try PartitionDatabase.open(directory: directory, partition: Int32(partition), migrator: OrchestratorSchema.migrator)
        _ = try await OrchestratorPartition(filling).reconcile(rules: rules)
        for chunk in stride(from: 0, to: indices.count, by: 50_000) {
            let part = indices[chunk..<min(chunk + 50_000, indices.count)]
            try await filling.write { db in
                try JourneyInstancesTable(db).keep(journey, at: t0)
                let time = WireTime.format(t0)
                for index in part {
                    let key = "demo/user-\(index)"
                    let entered = WireTime.format(since(index))
                    try db.execute(
                        sql: "INSERT INTO profiles (profile_key, project, custom_id, created_at, updated_at) VALUES (?, 'demo', ?, ?, ?)",
                        arguments: [key, "user-\(index)", time, time])
                    try db.execute(
                        sql: """
                            INSERT INTO installations (profile_key, installation_id, project, app, token, environment, notification_permission, install_date, last_visit_at, updated_at)
                            VALUES (?, ?, 'demo', 'ios', ?, 'production', 'granted', ?, ?, ?)
                            """,
                        arguments: [key, "i-\(index)", "token-\(index)", time, time, time])
                    try db.execute(
                        sql: """
                            INSERT INTO journey_instances (profile_key, journey, entry_id, version, node, since, entered_at, entry)
                            VALUES (?, 'demo/bench', ?, ?, 'wait', ?, ?, ?)
                            """,
                        arguments: [
                            key, "event s\(index)", journey.version, entered, entered,
                            #"{"type":"event","event_name":"SIGNED_UP","occurrence":"event s\#(index)","at":"\#(entered)"}"#,
                        ])
                    try db.execute(
                        sql: "INSERT INTO timers (profile_key, kind, ref, due_at) VALUES (?, 'journey', ?, ?)",
                        arguments: [key, "demo/bench wait event s\(index)", WireTime.format(due(index))])
                }
            }
        }
        try filling.close()
        let database = try PartitionDatabase.open(
            directory: directory, partition: Int32(partition), migrator: OrchestratorSchema.migrator, changelog: "herald.state.orchestrator")
        try await database.startWriting(at: 0, snapshot: false)
        return database
    }

    /// Profile `index`'s partition: consecutive profiles on consecutive partitions.
    static func partition(of index: Int) -> Int { index % partitions }

    static func count(_ databases: [PartitionDatabase], _ sql: String) async throws -> Int {
        var total = 0
        for database in databases { total += try await database.read { db in try Int.fetchOne(db, sql: sql) ?? 0 } }
        return total
    }

    /// Seconds of CPU (user and system) this process has used.
    static func cpuSeconds() -> Double {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        return Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
    }

    static func maxResidentMiB() -> Double {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        return Double(usage.ru_maxrss) / 1024
    }

    /// Every partition runs its due timers and its relay until none is due, at once; returns the profile keys of the
    /// send requests each round produced, with the round's end.
    static func drain(
        _ databases: [PartitionDatabase], rules: EngagementRules, publisher: DiscardingPublisher, sent: Locked<[(keys: [String], at: ContinuousClock.Instant)]>
    ) async throws {
        try await withThrowingTaskGroup(of: Void.self) { group in
            for database in databases {
                group.addTask {
                    while true {
                        let (ran, outbox) = try await OrchestratorPartition(database).runTimers(rules: rules)
                        let keys = outbox.filter { $0.topic == HeraldTopic.sendsPush.name }.map(\.key)
                        let at = ContinuousClock.now
                        if !keys.isEmpty { sent.withLock { $0.append((keys, at)) } }
                        try await database.produceOutbox(with: publisher)
                        if ran == 0 { break }
                    }
                }
            }
            try await group.waitForAll()
        }
    }

    @Test("journeys: 1,000,000 profiles waiting in delays, their ends due at 20,000 a second; a migration of 10,000")
    func journeys() async throws {
        let config = try configuration(demoProject, Self.template, Self.journey(wait: #"{"delay":"1h","next":"hi"}"#))
        let journey = try #require(config.journeys["demo/bench"])
        let start = t0.addingTimeInterval(3600)
        let clock = TestClock(start)
        let rules = EngagementRules(config: config, clock: { clock.now }, partitions: Self.partitions)
        let spacing = 1 / Self.rate
        let due: @Sendable (Int) -> Date = { index in start.addingTimeInterval(Double(index) * spacing) }
        let fillStart = ContinuousClock.now
        var databases: [PartitionDatabase] = []
        for partition in 0..<Self.partitions {
            let mine = Array(stride(from: partition, to: Self.profiles, by: Self.partitions))
            databases.append(
                try await Self.fill(
                    partition: partition, indices: mine, journey: journey, rules: rules, since: { due($0).addingTimeInterval(-3600) },
                    due: due))
        }
        let fillSeconds = (ContinuousClock.now - fillStart).timeInterval

        // Who is where, before the run: every partition asked at once (what the endpoint does for the partitions an
        // instance runs), the first page of 100 at the node and its counts; 50 times each, pages at random points.
        var pageSeconds: [Double] = []
        var countSeconds: [Double] = []
        var generator = SystemRandomNumberGenerator()
        for sample in 0..<50 {
            let after = sample == 0 ? "" : "demo/user-\(Int.random(in: 0..<Self.profiles, using: &generator))"
            let started = ContinuousClock.now
            let pages = try await withThrowingTaskGroup(of: [JourneyPositions.Position].self) { group in
                for database in databases {
                    group.addTask { try await database.read { db in try JourneyPositions.page(db, journey: "demo/bench", node: "wait", after: after, limit: 100) } }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            let page = JourneyPositions.merge(pages, limit: 100)
            pageSeconds.append((ContinuousClock.now - started).timeInterval)
            #expect(page.count == 100 || sample > 0)
            let countStart = ContinuousClock.now
            let counts = try await withThrowingTaskGroup(of: [JourneyPositions.Count].self) { group in
                for database in databases { group.addTask { try await database.read { db in try JourneyPositions.counts(db, journey: "demo/bench") } } }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            countSeconds.append((ContinuousClock.now - countStart).timeInterval)
            #expect(JourneyPositions.sum(counts).first?.count == Self.profiles)
        }
        let publisher = DiscardingPublisher()
        let sent = Locked<[(keys: [String], at: ContinuousClock.Instant)]>([])

        // The clock runs with the wall clock from the first end.
        let cpuBefore = Self.cpuSeconds()
        let runStart = ContinuousClock.now
        func elapsed() -> Double { (ContinuousClock.now - runStart).timeInterval }
        while sent.withLock({ $0.reduce(0) { $0 + $1.keys.count } }) < Self.profiles {
            clock.set(start.addingTimeInterval(elapsed()))
            try await Self.drain(databases, rules: rules, publisher: publisher, sent: sent)
            if elapsed() > Double(Self.profiles) * spacing + 600 { break }
            try await Task.sleep(for: .milliseconds(2))
        }
        let runSeconds = elapsed()
        let cpu = Self.cpuSeconds() - cpuBefore
        var lateness: [Double] = []
        lateness.reserveCapacity(Self.profiles)
        for round in sent.withLock({ $0 }) {
            let at = (round.at - runStart).timeInterval
            for key in round.keys {
                guard let index = Int(key.dropFirst("demo/user-".count)) else { continue }
                lateness.append(max(0, at - Double(index) * spacing))
            }
        }
        let ended = try await Self.count(databases, "SELECT count(*) FROM journey_instances WHERE ended = 'completed done'")
        #expect(lateness.count == Self.profiles && ended == Self.profiles)
        let transitions = Double(lateness.count) / runSeconds

        // The ceiling: plain profile writes on the same partitions, at once.
        let writes = max(20_000, Self.profiles / 50)
        let plainStart = ContinuousClock.now
        try await withThrowingTaskGroup(of: Void.self) { group in
            for (partition, database) in databases.enumerated() {
                group.addTask {
                    var writer = Writer()
                    writer.partition = Int32(partition)
                    writer.offset = 1_000_000
                    let mine = Array(stride(from: partition, to: writes, by: Self.partitions))
                    for chunk in stride(from: 0, to: mine.count, by: 500) {
                        let records = try mine[chunk..<min(chunk + 500, mine.count)].map { index in
                            try writer.update(id: "w\(index)", #"{"plan":"gold","age":\#(index % 90)}"#, customID: "user-\(index)")
                        }
                        _ = try await database.applyBatch(records) { db, record in try OrchestratorApplier.apply(db, record: record) }
                    }
                }
            }
            try await group.waitForAll()
        }
        let plainPerSecond = Double(writes) / (ContinuousClock.now - plainStart).timeInterval
        for database in databases { try database.close() }

        // Migration: 10,000 that have waited a day and a minute in a two-day wait; the wait becomes one day long.
        let waitConfig = try configuration(
            demoProject, Self.template,
            Self.journey(wait: #"{"wait":{"branches":[{"event":"purchased","next":"done"}],"timeout":{"after":"2d","next":"hi"}}}"#))
        let waiting = try #require(waitConfig.journeys["demo/bench"])
        let now = t0.addingTimeInterval(86_400 + 60)
        let migrationClock = TestClock(now)
        let before = EngagementRules(config: waitConfig, clock: { migrationClock.now }, partitions: Self.partitions)
        var migrationDatabases: [PartitionDatabase] = []
        for partition in 0..<Self.partitions {
            let mine = Array(stride(from: partition, to: Self.migrating, by: Self.partitions))
            migrationDatabases.append(
                try await Self.fill(
                    partition: partition, indices: mine, journey: waiting, rules: before, since: { _ in t0 },
                    due: { _ in t0.addingTimeInterval(2 * 86_400) }))
        }
        let after = EngagementRules(
            config: try configuration(
                demoProject, Self.template,
                Self.journey(
                    wait: #"{"wait":{"branches":[{"event":"purchased","next":"done"}],"timeout":{"after":"1d","next":"hi"}}}"#,
                    migrate: #","migrate":{"nodes":{"wait":"wait"}}"#)),
            clock: { migrationClock.now }, partitions: Self.partitions)
        let migrated = Locked<[(keys: [String], at: ContinuousClock.Instant)]>([])
        let migrationStart = ContinuousClock.now
        try await withThrowingTaskGroup(of: Void.self) { group in
            for database in migrationDatabases {
                group.addTask { _ = try await OrchestratorPartition(database).reconcile(rules: after) }
            }
            try await group.waitForAll()
        }
        let reconcileSeconds = (ContinuousClock.now - migrationStart).timeInterval
        try await Self.drain(migrationDatabases, rules: after, publisher: publisher, sent: migrated)
        let migrationSeconds = (ContinuousClock.now - migrationStart).timeInterval
        let movedOn = migrated.withLock { $0.reduce(0) { $0 + $1.keys.count } }
        #expect(movedOn == Self.migrating)
        for database in migrationDatabases { try database.close() }

        let p50 = percentile(lateness, 0.5), p99 = percentile(lateness, 0.99)
        print(
            """
            journey benchmark (\(ProcessInfo.processInfo.activeProcessorCount) cores, \(Self.partitions) partitions; filling took \(String(format: "%.0f", fillSeconds)) s)
              timers        \(Self.profiles) profiles waiting in a delay, ends due at \(Int(Self.rate))/s over \(String(format: "%.1f", Double(Self.profiles) * spacing)) s
              run           \(String(format: "%.2f", runSeconds)) s: \(Int(transitions)) transitions/s (each: the delay left, a push decided and rendered, the exit)
              lateness      p50 \(String(format: "%.1f", p50 * 1000)) ms, p99 \(String(format: "%.1f", p99 * 1000)) ms, max \(String(format: "%.1f", (lateness.max() ?? 0) * 1000)) ms
              cpu           \(String(format: "%.1f", cpu / Double(Self.profiles) * 1e6)) µs per transition (\(String(format: "%.1f", cpu)) s of CPU in \(String(format: "%.1f", runSeconds)) s)
              ceiling       \(Int(plainPerSecond)) plain profile writes/s on the same partitions
              memory        \(String(format: "%.0f", Self.maxResidentMiB())) MiB resident at most (the process, databases' caches included)
              who is where  first page of 100 at the node of \(Self.profiles): p50 \(String(format: "%.1f", percentile(pageSeconds, 0.5) * 1000)) ms, p99 \(String(format: "%.1f", percentile(pageSeconds, 0.99) * 1000)) ms; counts per node p50 \(String(format: "%.1f", percentile(countSeconds, 0.5) * 1000)) ms, p99 \(String(format: "%.1f", percentile(countSeconds, 0.99) * 1000)) ms (every partition at once, in process)
              migration     \(Self.migrating) waiting past a shortened wait: reconciled in \(String(format: "%.3f", reconcileSeconds)) s, all moved on in \(String(format: "%.3f", migrationSeconds)) s
            """)
        printFigure("journey_transitions_per_second_\(Self.profiles)", transitions, unit: "/s", ceiling: plainPerSecond, goal: ">=20000")
        printFigure("journey_timer_lateness_p99", p99 * 1000, unit: "ms", goal: "<=100")
        printFigure("journey_timer_lateness_p50", p50 * 1000, unit: "ms", goal: "-")
        printFigure("journey_cpu_per_transition", cpu / Double(Self.profiles) * 1e6, unit: "us", goal: "-")
        printFigure("journey_memory_resident", Self.maxResidentMiB(), unit: "MiB", goal: "-")
        printFigure("journey_migration_seconds_\(Self.migrating)", migrationSeconds, unit: "s", goal: "<=1")
        printFigure("journey_node_first_page_p99_\(Self.profiles)", percentile(pageSeconds, 0.99) * 1000, unit: "ms", goal: "<=100")
        printFigure("journey_node_counts_p99_\(Self.profiles)", percentile(countSeconds, 0.99) * 1000, unit: "ms", goal: "-")
    }
}
