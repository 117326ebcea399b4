import Foundation
import GRDB
import HeraldTestSupport
import Shared
import Synchronization
import Testing

@testable import Orchestrator
@testable import PartitionStore
@testable import OrchestratorDomain

/// Not a test: figures for scripts/bench/orchestrator (runs only with HERALD_BENCH=1, in release).
@Suite("Orchestrator benchmark", .enabled(if: ProcessInfo.processInfo.environment["HERALD_BENCH"] != nil), .serialized)
struct OrchestratorBenchmark {
    static let records = Int(ProcessInfo.processInfo.environment["HERALD_BENCH_RECORDS"] ?? "") ?? 200_000
    static let batchSize = 500

    /// A realistic mix over 2,000 profiles, each with one app installation: 60% events with attributes (half from the
    /// app), 20% attribute updates, 5% installation data, 5% push tokens, 5% locations (all from the app, so the
    /// installation's row is touched too), 5% email and marketing changes (which also write a contact snapshot to the
    /// outbox).
    static func workload() throws -> [KafkaRecord] {
        var writer = Writer()
        var records: [KafkaRecord] = []
        records.reserveCapacity(Self.records)
        let eventNames = ["viewed_item", "added_to_cart", "purchased", "app_open"]
        for index in 0..<Self.records {
            let profile = "user-\(index % 2000)"
            let at = t0.addingTimeInterval(Double(index))
            let kind = index % 20
            let fields: [JSONMember]
            let op: IngestOp
            writer.source = kind % 2 == 0 || kind >= 16 ? .app(id: "ios", dev: false) : .server
            if kind < 12 {
                op = .event
                fields = [
                    JSONMember(
                        "event",
                        .object([
                            JSONMember("name", .string(eventNames[index % 4].uppercased())),
                            JSONMember(
                                "attributes",
                                .object([
                                    JSONMember("item_id.s", .string("sku-\(index % 500)")),
                                    JSONMember("price.f", .number("\(index % 100).5")), JSONMember("in_stock.b", .bool(true)),
                                ])),
                        ]))
                ]
            } else if kind < 16 {
                op = .profileUpdate
                fields = [
                    JSONMember(
                        "profile",
                        .object([
                            JSONMember(
                                "custom_attributes",
                                .object([
                                    JSONMember("plan.s", .string(["free", "gold", "pro"][index % 3])),
                                    JSONMember("visits.i", .number(String(index))),
                                    JSONMember("interests.a", .object([JSONMember("$add", .array([.string("i\(index % 40)")])), JSONMember("$remove", .array([]))])),
                                ]))
                        ]))
                ]
            } else if kind == 16 {
                op = .installation
                fields = [
                    JSONMember(
                        "installation",
                        .object([
                            JSONMember("app_version", .string("3.\(index % 7)")), JSONMember("os_version", .string("18.1")),
                            JSONMember("notification_permission", .string(index % 3 == 0 ? "denied" : "allowed")),
                        ]))
                ]
            } else if kind == 17 {
                op = .pushToken
                let token = String(repeating: String(format: "%02x", index % 256), count: 32)
                fields = [JSONMember("push", .object([JSONMember("token", .string(token)), JSONMember("environment", .string("production"))]))]
            } else if kind == 18 {
                op = .location
                fields = [
                    JSONMember(
                        "location",
                        .object([JSONMember("latitude", .number("48.85")), JSONMember("longitude", .number("2.35"))]))
                ]
            } else {
                writer.source = .server
                op = .profileUpdate
                fields = [
                    JSONMember(
                        "profile",
                        .object([
                            JSONMember("email", .string("\(profile)-\(index % 3)@example.com")),
                            JSONMember("email_marketing", .string(index % 40 == 19 ? "subscribed" : "unsubscribed")),
                        ]))
                ]
            }
            let installation: String? = if case .app = writer.source { "inst-\(profile)" } else { nil }
            records.append(
                writer.record(op, id: "r\(index)", customID: profile, installationID: installation, at: at, fields: fields))
        }
        return records
    }

    @Test("profile writes applied per second vs raw SQLite inserts")
    func compare() async throws {
        let workload = try Self.workload()

        // The ceiling: plain rows into one table of a WAL database, one transaction per batch, same batch size.
        let rawPath = (temporaryDirectory() as NSString).appendingPathComponent("raw.sqlite")
        let raw = try DatabasePool(path: rawPath)
        try await raw.write { db in
            try db.execute(sql: "CREATE TABLE rows (id TEXT PRIMARY KEY, key TEXT, value BLOB) WITHOUT ROWID")
        }
        let rawStart = ContinuousClock.now
        for start in stride(from: 0, to: workload.count, by: Self.batchSize) {
            let batch = Array(workload[start..<min(start + Self.batchSize, workload.count)])
            try await raw.write { db in
                for record in batch {
                    try db.execute(
                        sql: "INSERT INTO rows (id, key, value) VALUES (?, ?, ?)",
                        arguments: ["\(record.offset)", record.keyString, record.value.map { Data($0) }])
                }
            }
        }
        let rawSeconds = Self.seconds(ContinuousClock.now - rawStart)

        let database = try OrchestratorPartition.open(directory: temporaryDirectory(), partition: 0)
        // As the service's partitions do: every commit tells which profiles changed, for their kept in-app tags.
        try await database.keepReadTags(owners: OrchestratorSchema.rowOwners, capacity: OrchestratorConfig.defaultInAppCachedTags)
        let start = ContinuousClock.now
        var outbox = 0
        for batchStart in stride(from: 0, to: workload.count, by: Self.batchSize) {
            let batch = Array(workload[batchStart..<min(batchStart + Self.batchSize, workload.count)])
            outbox += try await database.applyBatch(batch, apply: OrchestratorApplier.apply).count
        }
        let seconds = Self.seconds(ContinuousClock.now - start)
        let capsSeconds = try await Self.profileLimitChecks(database, records: workload.count)

        let rawRate = Double(workload.count) / rawSeconds
        let rate = Double(workload.count) / seconds
        print(
            """
            orchestrator benchmark (\(ProcessInfo.processInfo.activeProcessorCount) cores, \(workload.count) records, batches of \(Self.batchSize), 2000 profiles)
              profile writes applied   \(Int(rate)) records/s   (60% events, 20% attributes, 15% installation/token/location, 5% email; \(outbox) outbox records)
              raw SQLite inserts       \(Int(rawRate)) rows/s
              ratio applied / raw      \(String(format: "%.2f", rate / rawRate))
              profile_limits checks    \(String(format: "%.2f", capsSeconds / Double(workload.count) * 1e6)) µs per write, \(String(format: "%.1f", capsSeconds / seconds * 100)) % of the apply time
            """)
        printFigure("orchestrator_apply", rate, unit: "writes/s", ceiling: rawRate, goal: ">=50000/s_and_>=0.5x_raw_SQLite")
        #expect(outbox > 0)
    }

    /// The queries `ProfileCaps` adds to the workload's writes, run alone against the applied database, batch by batch
    /// as the applier would: every app write checks its installation (a row, else a count), every event its name (an
    /// aggregate row, else a count), every attribute update the profile's attribute count. Their time, in seconds.
    static func profileLimitChecks(_ database: PartitionDatabase, records: Int) async throws -> Double {
        let keys = try await database.read { db in
            try (0..<2000).map { index in
                try String.fetchOne(db, sql: "SELECT profile_key FROM profiles WHERE custom_id = ?", arguments: ["user-\(index)"])!
            }
        }
        let eventNames = ["viewed_item", "added_to_cart", "purchased", "app_open"].map { $0.uppercased() }
        let start = ContinuousClock.now
        for batchStart in stride(from: 0, to: records, by: batchSize) {
            let batchEnd = min(batchStart + batchSize, records)
            let admitted = try await database.read { db in
                let caps = ProfileCaps(db: db, limits: ProfileLimits())
                var admitted = 0
                for index in batchStart..<batchEnd {
                    let key = keys[index % 2000]
                    let kind = index % 20
                    if kind % 2 == 0 || (16..<19).contains(kind) {
                        admitted += try caps.admitsInstallation("inst-user-\(index % 2000)", key: key) ? 1 : 0
                    }
                    if kind < 12 {
                        admitted += try caps.admitsEvent(eventNames[index % 4], key: key) ? 1 : 0
                    } else if kind < 16 {
                        admitted += try ProfileAttributesTable(db).count(key) + 3 <= ProfileLimits().attributes ? 1 : 0
                    }
                }
                return admitted
            }
            precondition(admitted > 0)
        }
        return Self.seconds(ContinuousClock.now - start)
    }

    static func seconds(_ duration: Duration) -> Double {
        duration.timeInterval
    }
}

/// Not a test: segment figures for scripts/bench/segments (runs only with HERALD_BENCH=1, in release).
@Suite("Segment benchmark", .enabled(if: ProcessInfo.processInfo.environment["HERALD_BENCH"] != nil), .serialized)
struct SegmentBenchmark {
    /// 100 segments over the paths the workload writes: custom attributes, event counts and recency (time conditions,
    /// so timers too), tags, natives, email and push reachability, in and contains.
    static func hundredSegments() throws -> HeraldConfiguration {
        let events = ["VIEWED_ITEM", "ADDED_TO_CART", "PURCHASED", "APP_OPEN"]
        var objects = [#"{"kind":"project","id":"demo"}"#]
        for index in 0..<100 {
            let event = events[index % 4]
            let condition: String
            switch index % 10 {
            case 0: condition = "c.plan = \"\(["free", "gold", "pro"][index % 3])\""
            case 1: condition = "c.visits > \(index * 1000)"
            case 2: condition = "e.\(event).count >= \(index / 10 + 1)"
            case 3: condition = "e.\(event).last > now - \(index / 10 + 1)d"
            case 4: condition = "e.\(event).item_id = \"sku-\(index)\""
            case 5: condition = "c.interests contains \"i\(index % 40)\""
            case 6: condition = "email.marketing = \"subscribed\" and email.reachable = true"
            case 7: condition = "push.reachable = true and b.app_version in [\"3.\(index % 7)\", \"3.\((index + 1) % 7)\"]"
            case 8: condition = "e.\(event).price > \(index % 100) and not c.plan = \"free\""
            default: condition = "b.last_visit_date > now - \(index / 10 + 1)h or c.visits < \(index * 10)"
            }
            let object = JSONValue.object([
                JSONMember("kind", .string("segment")), JSONMember("id", .string("s\(index)")),
                JSONMember("project", .string("demo")), JSONMember("condition", .string(condition)),
            ])
            objects.append(String(decoding: object.serialized, as: UTF8.self))
        }
        let nodes = try objects.map { (file: "bench", node: ConfigNode(json: try JSONParser.parse(Array($0.utf8)))) }
        let (config, issues) = HeraldConfiguration.read(nodes)
        precondition(issues.isEmpty, "\(issues)")
        return config
    }

    @Test("segment re-evaluations per second on profile writes with 100 segments, and a backfill over 1M profiles")
    func segments() async throws {
        let workload = try OrchestratorBenchmark.workload()
        let config = try Self.hundredSegments()
        let rules = EngagementRules(config: config, clock: { t0 + 200_000 })
        let database = try OrchestratorPartition.open(directory: temporaryDirectory(), partition: 0)
        // The same profiles first, so that the measured writes re-evaluate existing members.
        let before = SegmentEvaluator.evaluations.load(ordering: .relaxed)
        let start = ContinuousClock.now
        for batchStart in stride(from: 0, to: workload.count, by: OrchestratorBenchmark.batchSize) {
            let batch = Array(workload[batchStart..<min(batchStart + OrchestratorBenchmark.batchSize, workload.count)])
            _ = try await database.applyBatch(batch) { db, record in try OrchestratorApplier.apply(db, record: record, rules: rules) }
        }
        let seconds = OrchestratorBenchmark.seconds(ContinuousClock.now - start)
        let evaluations = SegmentEvaluator.evaluations.load(ordering: .relaxed) - before
        let (members, timers) = try await database.read { db in
            (try Int.fetchOne(db, sql: "SELECT count(*) FROM segment_members") ?? 0,
             try Int.fetchOne(db, sql: "SELECT count(*) FROM timers") ?? 0)
        }

        // Backfill: 1M profiles with attributes written straight into a partition, then a new segment over them.
        let profiles = Int(ProcessInfo.processInfo.environment["HERALD_BENCH_PROFILES"] ?? "") ?? 1_000_000
        let big = try OrchestratorPartition.open(directory: temporaryDirectory(), partition: 0)
        let fillStart = ContinuousClock.now
        for chunk in stride(from: 0, to: profiles, by: 50_000) {
            try await big.write { db in
                let time = WireTime.format(t0)
                for index in chunk..<min(chunk + 50_000, profiles) {
                    let key = "demo/user-\(index)"
                    try db.execute(
                        sql: "INSERT INTO profiles (profile_key, project, custom_id, language, created_at, updated_at) VALUES (?, 'demo', ?, ?, ?, ?)",
                        arguments: [key, "user-\(index)", index % 2 == 0 ? "fr" : "en", time, time])
                    try db.execute(
                        sql: "INSERT INTO profile_attributes (profile_key, name, type, value, updated_at) VALUES (?, 'plan', 's', ?, ?), (?, 'visits', 'i', ?, ?)",
                        arguments: [key, "\"\(["free", "gold", "pro"][index % 3])\"", time, key, "\(index % 1000)", time])
                }
            }
        }
        let fillSeconds = OrchestratorBenchmark.seconds(ContinuousClock.now - fillStart)
        let newSegment = try configuration(
            #"{"kind":"project","id":"demo"}"#,
            #"{"kind":"segment","id":"gold-fr","project":"demo","condition":"c.plan = \"gold\" and b.language = \"fr\" and c.visits >= 100"}"#)
        let backfillRules = EngagementRules(config: newSegment, clock: { t0 })
        let pending = try await OrchestratorPartition(big).reconcile(rules: backfillRules)
        let backfillStart = ContinuousClock.now
        var evaluated = 0
        var done = false
        repeat {
            let chunk = try await OrchestratorPartition(big).backfill(rules: backfillRules, segment: pending[0])
            done = chunk.done
            evaluated += chunk.evaluated
        } while !done
        let backfillSeconds = OrchestratorBenchmark.seconds(ContinuousClock.now - backfillStart)
        // The ceiling: a SQLite scan of the same rows (profiles and their attributes, in key order), each row read.
        let scanStart = ContinuousClock.now
        let scanned = try await big.read { db in
            var rows = 0
            let profiles = try Row.fetchCursor(db, sql: "SELECT * FROM profiles ORDER BY profile_key")
            while let row = try profiles.next() { rows += (row["profile_key"] as String).isEmpty ? 0 : 1 }
            let attributes = try Row.fetchCursor(db, sql: "SELECT profile_key, name, type, value FROM profile_attributes")
            while let row = try attributes.next() { rows += (row[3] as String).isEmpty ? 0 : 1 }
            return rows
        }
        let scanRate = Double(profiles) / OrchestratorBenchmark.seconds(ContinuousClock.now - scanStart)
        let entered = try await big.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM segment_members") ?? 0 }
        print(
            """
            segment benchmark (\(ProcessInfo.processInfo.activeProcessorCount) cores, 100 segments, \(workload.count) writes over 2000 profiles, batches of \(OrchestratorBenchmark.batchSize))
              profile writes applied   \(Int(Double(workload.count) / seconds)) records/s with the segments
              segment re-evaluations   \(Int(Double(evaluations) / seconds)) /s   (\(evaluations) in all, \(String(format: "%.1f", Double(evaluations) / Double(workload.count))) per write; \(members) memberships, \(timers) timers at the end)
              backfill of a new segment over \(evaluated) profiles: \(Int(Double(evaluated) / backfillSeconds)) profiles/s (\(String(format: "%.1f", backfillSeconds)) s, \(entered) members; filling took \(String(format: "%.0f", fillSeconds)) s)
              SQLite scan of the same rows: \(Int(scanRate)) profiles/s (\(scanned) rows); ratio backfill / scan \(String(format: "%.2f", Double(evaluated) / backfillSeconds / scanRate))
            """)
        printFigure("segments_apply_100", Double(workload.count) / seconds, unit: "writes/s", goal: ">=25000/s")
        printFigure("segment_evaluations_per_write", Double(evaluations) / Double(workload.count), unit: "evaluations", goal: "-")
        printFigure(
            "segment_backfill", Double(evaluated) / backfillSeconds, unit: "profiles/s", ceiling: scanRate,
            goal: ">=0.3x_SQLite_scan")
        printFigure(
            "segment_backfill_seconds_\(profiles)", backfillSeconds, unit: "s", goal: profiles == 1_000_000 ? "<5" : "<5_at_1M")
        #expect(evaluations > 0 && evaluated == profiles)
    }
}
