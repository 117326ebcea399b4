import Foundation
import GRDB
import Shared
import Testing

@testable import Orchestrator
@testable import ProfileStore

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

        let database = try PartitionDatabase.open(directory: temporaryDirectory(), partition: 0)
        let start = ContinuousClock.now
        var outbox = 0
        for batchStart in stride(from: 0, to: workload.count, by: Self.batchSize) {
            let batch = Array(workload[batchStart..<min(batchStart + Self.batchSize, workload.count)])
            outbox += try await database.applyBatch(batch, apply: ProfileApplier.apply).count
        }
        let seconds = Self.seconds(ContinuousClock.now - start)

        let rawRate = Double(workload.count) / rawSeconds
        let rate = Double(workload.count) / seconds
        print(
            """
            orchestrator benchmark (\(ProcessInfo.processInfo.activeProcessorCount) cores, \(workload.count) records, batches of \(Self.batchSize), 2000 profiles)
              profile writes applied   \(Int(rate)) records/s   (60% events, 20% attributes, 15% installation/token/location, 5% email; \(outbox) outbox records)
              raw SQLite inserts       \(Int(rawRate)) rows/s
              ratio applied / raw      \(String(format: "%.2f", rate / rawRate))
            """)
        #expect(outbox > 0)
    }

    static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }
}
