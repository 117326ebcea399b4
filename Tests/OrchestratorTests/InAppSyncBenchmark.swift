import Foundation
import GRDB
import HeraldTestSupport
import Hummingbird
import Logging
import ServiceSupport
import Shared
import Synchronization
import Testing

@testable import Orchestrator
@testable import PartitionStore
@testable import OrchestratorDomain

/// Not a test: the server of scripts/bench/in-app (runs only with HERALD_BENCH_SYNC_DIR, in release). One partition
/// database holding `HERALD_BENCH_PROFILES` profiles (1M by default), each with an installation and a plan that puts it
/// in one of 10 segments; 100 live in-app messages (90 with one of those segments as audience, 10 for everyone, each
/// rendered with the profile's first name), so that a sync renders 19 messages. The production read path serves them
/// (`AppReads`: the app key; `OrchestratorPartitions` running the partition: the profile's partition, its kept tags,
/// the holder check, eligibility, rendering), next to `/static`, a constant 200 of the same server (the ceiling). It
/// writes the port to `port` in that directory once listening, and stops when a file `stop` appears there; the script
/// drives it with wrk. `HERALD_BENCH_DOMAIN_SAMPLES` (2,000 by default) sets how many syncs each domain-alone loop
/// times: raise it to profile them.
@Suite("In-app sync benchmark", .enabled(if: ProcessInfo.processInfo.environment["HERALD_BENCH_SYNC_DIR"] != nil), .serialized)
struct InAppSyncBenchmark {
    static let environment = ProcessInfo.processInfo.environment
    static let profiles = Int(environment["HERALD_BENCH_PROFILES"] ?? "") ?? 1_000_000
    static let templates = 10
    /// `HERALD_IN_APP_CACHED_TAGS` as an operator sizes it for this load: the 100,000 apps that revalidate, and the
    /// tags of the full syncs before them.
    static let keptTags = 200_000

    static func config() throws -> HeraldConfiguration {
        var objects = [demoProject]
        for segment in 0..<templates {
            objects.append(#"{"kind":"segment","id":"plan-\#(segment)","project":"demo","condition":"c.plan = \"p\#(segment)\""}"#)
        }
        for message in 0..<100 {
            let audience = message < 90 ? #","audience":"plan-\#(message % templates)""# : ""
            objects.append(
                #"""
                {"kind":"in_app_message","id":"m\#(message)","project":"demo","type":"modal","priority":\#(message % 101)\#(audience),
                 "reeligibility":{"max":3,"per":"7d"},"triggers":[{"event":"add_to_cart","where":"event.price > \#(message)"},{"session_start":true}],
                 "buttons":[{"id":"go","action":{"uri":"demo://m\#(message)"}}],
                 "variants":{"default":{"header":"Offer \#(message)","message":"{{ c.first_name | default: \"Hello\" }}, see offer \#(message)","button.go":"Go"}}}
                """#)
        }
        return try configuration(objects)
    }

    /// The database: 10 template profiles written through the applier (identify, attributes, segment entries), then
    /// copied row for row, every table that holds a profile's rows, under new keys (`demo/u<n>`, template `n % 10`).
    static func database(_ rules: EngagementRules, directory: String) async throws -> PartitionDatabase {
        let database = try PartitionDatabase.open(directory: directory, partition: 0, migrator: OrchestratorSchema.migrator)
        var writer = Writer()
        var records: [KafkaRecord] = []
        for template in 0..<templates {
            writer.source = .app(id: "ios", dev: false)
            records.append(writer.record(.identify, id: "i\(template)", customID: "u\(template)", installationID: "T"))
            writer.source = .server
            records.append(try writer.update(id: "a\(template)", #"{"plan":"p\#(template)","first_name":"Ann"}"#, customID: "u\(template)"))
        }
        _ = try await database.applyBatch(records) { db, record in try OrchestratorApplier.apply(db, record: record, rules: rules) }
        let count = profiles
        try await database.write { db in
            let tables = try String.fetchAll(db, sql: "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")
            for table in tables {
                let columns = try db.columns(in: table).map(\.name)
                guard columns.contains("profile_key") else { continue }
                let select = columns.map { $0 == "profile_key" ? "'demo/u' || n" : "t.\"\($0)\"" }.joined(separator: ", ")
                try db.execute(
                    sql: """
                        WITH RECURSIVE seq(n) AS (SELECT \(templates) UNION ALL SELECT n + 1 FROM seq WHERE n + 1 < ?)
                        INSERT INTO "\(table)" (\(columns.map { "\"\($0)\"" }.joined(separator: ", ")))
                        SELECT \(select) FROM seq JOIN "\(table)" t ON t.profile_key = 'demo/u' || (n % \(templates))
                        """, arguments: [count])
            }
        }
        return database
    }

    /// The orchestrator's read path (`OrchestratorPartitions`, running the benchmark's partition: the actors, the
    /// partition's kept tags, the read), or with a file `cold` in the benchmark's directory the same read without kept
    /// tags (every sync reads); counts the answers without a body.
    final class Source: AppReadSource {
        let partitions: OrchestratorPartitions
        let database: PartitionDatabase
        let rules: EngagementRules
        let coldFile: String
        /// Whether `cold` is there, looked at ten times a second.
        let cold = Atomic<Bool>(false)
        let unchanged = Atomic<Int>(0)
        let rendered = Atomic<Int>(0)

        init(partitions: OrchestratorPartitions, database: PartitionDatabase, rules: EngagementRules, directory: String) {
            self.partitions = partitions
            self.database = database
            self.rules = rules
            coldFile = "\(directory)/cold"
        }

        func inAppMessages(key: String, installationID: String, after writeID: String?, ifNoneMatch: String?, now: Date) async throws
            -> AppRead<InAppEligibility.Answer>
        {
            let read =
                cold.load(ordering: .relaxed)
                ? try await OrchestratorPartitions.inAppAnswer(
                    database, tags: nil, rules: rules, key: key, installationID: installationID, after: writeID,
                    ifNoneMatch: ifNoneMatch, now: now)
                : try await partitions.inAppMessages(
                    key: key, installationID: installationID, after: writeID, ifNoneMatch: ifNoneMatch, now: now)
            if case .answer(let answer) = read {
                if answer.json == nil { unchanged.add(1, ordering: .relaxed) } else { rendered.add(1, ordering: .relaxed) }
            }
            return read
        }

        func contentCards(
            key: String, installationID: String, after writeID: String?, since cursor: ContentCardFeed.Cursor?, now: Date
        ) async throws -> AppRead<JSONValue> {
            try await partitions.contentCards(key: key, installationID: installationID, after: writeID, since: cursor, now: now)
        }

        func geofences(key: String, installationID: String, app: String, after writeID: String?, ifNoneMatch: String?) async throws
            -> AppRead<GeofenceSync.Answer>
        {
            try await partitions.geofences(key: key, installationID: installationID, app: app, after: writeID, ifNoneMatch: ifNoneMatch)
        }
    }

    @Test("serve syncs until told to stop")
    func serve() async throws {
        let directory = try #require(Self.environment["HERALD_BENCH_SYNC_DIR"])
        let config = try Self.config()
        let rules = EngagementRules(config: config, clock: { Date() })
        let started = ContinuousClock.now
        let data = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: data) }
        let database = try await Self.database(rules, directory: data)
        // Its segments backfilled, as the copy made them.
        try await database.write { db in
            for segment in config.segments.values {
                try SegmentStateTable(db).backfilled(segment.key, condition: segment.conditionText, at: Date())
            }
        }
        let prepared = ContinuousClock.now - started
        let profiles = try await database.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM profiles") ?? 0 }
        let members = try await database.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM segment_members") ?? 0 }
        // The domain alone, one thread: what a sync costs before HTTP.
        let sample = Int(Self.environment["HERALD_BENCH_DOMAIN_SAMPLES"] ?? "") ?? 2_000
        let domainStart = ContinuousClock.now
        var rendered = 0
        for index in 0..<sample {
            let key = "demo/u\((index * 7919) % Self.profiles)"
            let answer = try await database.read { db in
                try InAppEligibility(db: db, config: config, now: Date()).answer(key: key, installationID: "T")
            }
            if case .array(let messages)? = answer?.json?["messages"] { rendered += messages.count }
        }
        let perSync = Self.microseconds(ContinuousClock.now - domainStart) / Double(sample)
        // The orchestrator's partitions, this instance running the one partition.
        try database.close()
        let partitions = OrchestratorPartitions(
            directory: data, producer: DiscardingPublisher(), logger: Logger(label: "bench", factory: { _ in SwiftLogNoOpLogHandler() }),
            partitions: 1, cachedTags: Self.keptTags)
        await partitions.setConfiguration(config)
        _ = try await partitions.partitionsAssigned([TopicPartition(HeraldTopic.ingest.name, 0), TopicPartition(HeraldTopic.deliveries.name, 0)])
        let running = try #require(await partitions.owner.openDatabases.first?.database)
        let source = Source(partitions: partitions, database: running, rules: try #require(await partitions.rules), directory: directory)
        // The first users' apps sync once through the read path: what wrk's revalidating syncs send is the tag each
        // holds, kept by the partition.
        let tagged = min(Self.profiles, 100_000)
        var held: [String] = []
        for user in 0..<tagged {
            let read = try await source.inAppMessages(key: "demo/u\(user)", installationID: "T", after: nil, ifNoneMatch: nil, now: Date())
            guard case .answer(let answer) = read else {
                Issue.record("user \(user) not answered")
                return
            }
            held.append(answer.etag)
        }
        let tags = held
        _ = source.rendered.exchange(0, ordering: .relaxed)
        try ("return {\n" + tags.map { "'\($0)',\n" }.joined() + "}\n").write(toFile: "\(directory)/tags.lua", atomically: true, encoding: .utf8)
        // The domain alone, one thread, when the app's tag is current: no message rendered.
        let revalidationStart = ContinuousClock.now
        var unchanged = 0
        for index in 0..<sample {
            let user = (index * 7919) % tagged
            let answer = try await running.read { db in
                try InAppEligibility(db: db, config: config, now: Date()).answer(key: "demo/u\(user)", installationID: "T") { $0 == tags[user] }
            }
            if answer?.json == nil { unchanged += 1 }
        }
        let perRevalidation = Self.microseconds(ContinuousClock.now - revalidationStart) / Double(sample)
        print(
            "in-app sync benchmark: \(profiles) profiles, \(members) segment memberships, 100 live messages, prepared in \(prepared)")
        print("figure-line domain_us_per_sync=\(String(format: "%.1f", perSync)) messages_per_sync=\(rendered / sample)")
        print(
            "figure-line domain_us_per_revalidation=\(String(format: "%.1f", perRevalidation)) unchanged=\(unchanged) of \(sample) tagged_users=\(tagged)")

        var catalog = try AppsCatalog.load(path: repositoryFile("config/apps.sample.json"))
        catalog.projects[0].apps[0].requireSignedIdentity = false
        let router = Router(context: ServiceRequestContext.self)
        router.get("static") { _, _ in "ok" }
        // The production composition, its limits off: the load comes from one address, as fast as it can.
        AppReads(manager: source, catalog: catalog, owners: nil, instance: "bench").register(
            on: router, limits: .off, maxInFlight: 100_000, peerKey: "bench")
        let app = Application(
            router: router,
            configuration: ApplicationConfiguration(address: .hostname("127.0.0.1", port: 0), serverName: "herald-bench"),
            onServerRunning: { channel in
                try? "\(channel.localAddress?.port ?? 0)".write(toFile: "\(directory)/port", atomically: true, encoding: .utf8)
            },
            logger: Logger(label: "bench", factory: { _ in SwiftLogNoOpLogHandler() }))
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await app.runService() }
            while !FileManager.default.fileExists(atPath: "\(directory)/stop") {
                source.cold.store(FileManager.default.fileExists(atPath: source.coldFile), ordering: .relaxed)
                try await Task.sleep(for: .milliseconds(100))
            }
            group.cancelAll()
        }
        print("figure-line answers_rendered=\(source.rendered.load(ordering: .relaxed)) answers_unchanged=\(source.unchanged.load(ordering: .relaxed))")
        await partitions.partitionsRevoked([TopicPartition(HeraldTopic.ingest.name, 0), TopicPartition(HeraldTopic.deliveries.name, 0)], lost: false)
    }

    static func microseconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) * 1e6 + Double(duration.components.attoseconds) / 1e12
    }
}
