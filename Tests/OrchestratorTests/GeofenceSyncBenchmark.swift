import Foundation
import GRDB
import HeraldTestSupport
import Shared
import Testing

@testable import OrchestratorDomain
@testable import PartitionStore

/// Not a test: the geofence sync's figures for scripts/bench/geofences (runs only with HERALD_BENCH=1, in release).
///
/// 10,000 geofences in each of HERALD_BENCH_SETS sets (default 1) spread over France, 1,000 installations located
/// across it; each sync is the answer the orchestrator's read path computes in the partition's database (the
/// installation's row, the nearest, the answer's JSON and tag). Printed next to the ceiling measured in the same run:
/// the same read of the installation's row and an empty answer (what any app read costs before its own work), and
/// against the goal the in-app sync has (p99 <= 20 ms over HTTP, docs/performance.md).
@Suite("Geofence sync benchmark", .enabled(if: ProcessInfo.processInfo.environment["HERALD_BENCH"] != nil), .serialized)
struct GeofenceSyncBenchmark {
    static let sets = Int(ProcessInfo.processInfo.environment["HERALD_BENCH_SETS"] ?? "") ?? 1
    static let syncs = Int(ProcessInfo.processInfo.environment["HERALD_BENCH_SYNCS"] ?? "") ?? 20_000
    static let installations = 1_000

    static func config() throws -> HeraldConfiguration {
        var generator = SystemRandomNumberGenerator()
        var objects = [demoProject, #"{"kind":"app","id":"ios","project":"demo","platform":"ios"}"#]
        for set in 0..<sets {
            let geofences = (0..<GeofenceSetDefinition.maxGeofences).map { index in
                let latitude = Double.random(in: 42.5...51, using: &generator)
                let longitude = Double.random(in: -4.5...8, using: &generator)
                return #"{"id":"g\#(index)","latitude":\#(latitude),"longitude":\#(longitude),"radius":200}"#
            }
            objects.append(#"{"kind":"geofence_set","id":"s\#(set)","project":"demo","apps":["ios"],"geofences":[\#(geofences.joined(separator: ","))]}"#)
        }
        return try configuration(objects)
    }

    @Test("sync answers per second and p99, next to the read alone")
    func syncs() async throws {
        let config = try Self.config()
        let harness = try await EngagementHarness(config)
        harness.writer.source = .app(id: "ios", dev: false)
        var records: [KafkaRecord] = []
        for index in 0..<Self.installations {
            let id = "I\(index)"
            records.append(harness.writer.record(.identify, id: "i\(index)", customID: "u\(index)", installationID: id))
            let location: [JSONMember] = [JSONMember("location", .object([
                JSONMember("latitude", .number(JSONValue.literal(Double.random(in: 43...50.5)))),
                JSONMember("longitude", .number(JSONValue.literal(Double.random(in: -4...7.5)))),
            ]))]
            records.append(harness.writer.record(.location, id: "l\(index)", customID: "u\(index)", installationID: id, fields: location))
        }
        try await harness.apply(records)
        /// Each sync: an installation (`I<n>`) under its user's profile (`demo/u<n>`).
        func measure(_ answer: @escaping @Sendable (Database, String, String) throws -> Void) async throws -> (rate: Double, p99: Double) {
            var latencies: [Double] = []
            latencies.reserveCapacity(Self.syncs)
            let started = ContinuousClock.now
            for index in 0..<Self.syncs {
                let number = index % Self.installations
                let begin = ContinuousClock.now
                try await harness.database.read { db in try answer(db, "demo/u\(number)", "I\(number)") }
                let took = ContinuousClock.now - begin
                latencies.append(Double(took.components.attoseconds) / 1e15 + Double(took.components.seconds) * 1000)
            }
            let seconds = (ContinuousClock.now - started) / .seconds(1)
            return (Double(Self.syncs) / seconds, percentile(latencies, 0.99))
        }
        let ceiling = try await measure { db, key, id in
            _ = try InstallationsTable(db).record(key, id)
            _ = JSONValue.object([JSONMember("geofences", .array([]))]).serialized
        }
        let sync = try await measure { db, key, id in
            guard let answer = try GeofenceSync(db: db, config: config).answer(key: key, installationID: id, app: "ios"),
                answer.json != nil
            else { throw Failure("no answer for \(id)") }
        }
        print("geofence sync: \(Self.sets) set(s) of \(GeofenceSetDefinition.maxGeofences) geofences, \(Self.syncs) syncs over \(Self.installations) installations")
        print(String(format: "  the read alone (the ceiling)  %.0f/s   p99 %.3f ms", ceiling.rate, ceiling.p99))
        print(String(format: "  the geofence sync             %.0f/s   p99 %.3f ms", sync.rate, sync.p99))
        printFigure("geofence_sync_p99", sync.p99, unit: "ms", ceiling: ceiling.p99, goal: "<=20ms")
        printFigure("geofence_syncs_per_second", sync.rate, unit: "syncs/s", ceiling: ceiling.rate, goal: "-")
    }
}
