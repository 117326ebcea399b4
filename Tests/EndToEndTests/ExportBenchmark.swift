import Foundation
import HeraldTestSupport
import ProviderSimulators
import Shared
import Testing

/// Not a test: the figures of scripts/bench/export (runs only with HERALD_BENCH=1, in release). herald-ingest,
/// herald-orchestrator and herald-notifier as processes on the embedded broker, with their defaults. One person, Paul,
/// is given at least `items` stored rows through the real path (transactional pushes to his installation: about four rows
/// each in the notifier, its send and ledger among them, and one in the orchestrator), then exported `samples` times
/// through the orchestrator's one endpoint (`GET /v1/export/demo?…`, both services, every partition: the notifier's
/// part asked through Kafka), by custom ID and by email. Goal: under a second (issue 61).
@Suite("Export benchmark", .enabled(if: ProcessInfo.processInfo.environment["HERALD_BENCH"] != nil), .serialized)
struct ExportBenchmark {
    static let items = Int(ProcessInfo.processInfo.environment["HERALD_BENCH_ITEMS"] ?? "") ?? 10_000
    static let samples = Int(ProcessInfo.processInfo.environment["HERALD_BENCH_SAMPLES"] ?? "") ?? 20

    @Test("a person with 10,000 stored items, exported through one endpoint")
    func export() async throws {
        let (stack, simulators, _) = try await StateMoveTests.makeStack()
        defer { try? FileManager.default.removeItem(atPath: stack.work) }
        try await stack.applyConfiguration(StateMoveTests.projectAndApp)
        let environment = sampleApps.merging(StateMoveTests.benchEnvironment) { $1 }
        let orchestrator = try stack.orchestrator("o1", environment: environment)
        let notifier = try stack.notifier("n1", environment: StateMoveTests.benchEnvironment)
        let ingest = try stack.ingest(environment: StateMoveTests.benchEnvironment)
        let ingestURL = "http://127.0.0.1:\(try await StateMoveTests.port(ingest))"
        let exportURL = "http://127.0.0.1:\(try await StateMoveTests.port(orchestrator))/v1/export/demo"
        for process in [orchestrator, notifier] {
            try await waitUntil("\(process.name)'s partitions", timeout: .seconds(60)) {
                !process.logs("partition databases open").isEmpty || process.exitCode != nil
            }
        }
        let token = String(repeating: "5e", count: 32)
        for (path, body) in [
            ("/v1/app/installation", #"{"installation_id":"I-1","custom_id":"paul","notification_permission":"allowed"}"#),
            ("/v1/app/push-token", #"{"installation_id":"I-1","custom_id":"paul","token":"\#(token)","environment":"production"}"#),
        ] {
            let (status, answer) = try await httpPost("\(ingestURL)\(path)", headers: signedAppHeaders("paul"), body: body)
            guard status == 200 else { throw TimedOut(what: "\(path): \(status) \(answer)") }
        }
        let (updated, answer) = try await httpPost(
            "\(ingestURL)/v1/profiles/update", headers: ["Authorization": "Bearer rest_demo_0123456789abcdef"],
            body: #"[{"identifiers":{"custom_id":"paul"},"attributes":{"$email_address":"paul@example.com"}}]"#)
        guard updated == 200 else { throw TimedOut(what: "profile update: \(updated) \(answer)") }
        // The installation's link reaches its home partition after the write is acknowledged: a push sent before would
        // go from the anonymous installation, which has no contact (docs/data-rights.md, "Export", the benchmark).
        _ = try await readTopic(HeraldTopic.contacts.name, bootstrap: stack.cluster.bootstrapServers, logger: quietLogger) { contacts in
            contacts.contains { $0.value.map { String(decoding: $0, as: UTF8.self).contains(token) } ?? false }
        }

        /// The export's lines by custom ID, once they stop growing (read every second).
        func settledLines() async throws -> Int {
            var last = -1
            while true {
                let (status, body) = try await httpGet("\(exportURL)?custom_id=paul")
                let lines = status == 200 ? body.split(separator: "\n").count : 0
                if status == 200 && lines == last { return lines }
                last = status == 200 ? lines : -1
                try await Task.sleep(for: .seconds(1))
            }
        }
        var sent = 0
        /// `count` more pushes to Paul's installation, 8 calls at a time, each one a push at APNs.
        func push(_ count: Int) async throws {
            let first = sent
            sent += count
            try await withThrowingTaskGroup(of: Void.self) { group in
                for lane in 0..<8 {
                    group.addTask {
                        for index in stride(from: first + lane, to: first + count, by: 8) {
                            let body = #"{"installation_id":"I-1","id":"bench-\#(index)","notification":{"title":"Order \#(index)","body":"Your order \#(index) has shipped and arrives Thursday"},"payload":{"order":\#(index)}}"#
                            let (status, answer) = try await httpPost(
                                "\(ingestURL)/v1/sends/push", headers: ["Authorization": "Bearer rest_demo_0123456789abcdef"], body: body)
                            guard status == 200 else { throw TimedOut(what: "send \(index): \(status) \(answer)") }
                        }
                    }
                }
                try await group.waitForAll()
            }
            let total = sent
            do {
                try await waitUntil("APNs to receive \(total) pushes", timeout: .seconds(Int64(60 + total / 20))) { simulators.count("apns") >= total }
            } catch {
                print("export benchmark: APNs received \(simulators.count("apns")) of \(total)")
                for process in [orchestrator, notifier, ingest] {
                    let path = "\(stack.work)-\(process.name).log"
                    try? process.output.joined(separator: "\n").write(toFile: path, atomically: true, encoding: .utf8)
                    print("export benchmark: \(process.name)'s log in \(path)")
                    if let port = try? await StateMoveTests.port(process), let (_, metrics) = try? await httpGet("http://127.0.0.1:\(port)/metrics") {
                        try? metrics.write(toFile: path + ".metrics", atomically: true, encoding: .utf8)
                    }
                }
                throw error
            }
        }
        try await push(100)
        let base = try await settledLines()
        let perPush = max(1, base / 100)
        if base < Self.items {
            try await push((Self.items - base + perPush - 1) / perPush)
        }
        let held = try await settledLines()
        print("export benchmark: Paul holds \(held) rows after \(sent) pushes")

        var timings: [String: [Double]] = [:]
        var shown: [String: (lines: Int, bytes: Int, services: [String: Int])] = [:]
        for query in ["custom_id=paul", "email=paul@example.com"] {
            for _ in 0..<Self.samples {
                let start = ContinuousClock.now
                let (status, body) = try await httpGet("\(exportURL)?\(query)")
                let elapsed = ContinuousClock.now - start
                guard status == 200 else { throw TimedOut(what: "export \(query): \(status) \(body.prefix(300))") }
                timings[query, default: []].append(Double(elapsed.components.seconds) * 1000 + Double(elapsed.components.attoseconds) / 1e15)
                var services: [String: Int] = [:]
                for line in body.split(separator: "\n") {
                    services[(try? JSONParser.parse(Array(line.utf8)))?["service"]?.stringValue ?? "?", default: 0] += 1
                }
                shown[query] = (body.split(separator: "\n").count, body.utf8.count, services)
            }
        }
        for (query, values) in timings.sorted(by: { $0.key < $1.key }) {
            let sorted = values.sorted()
            let p50 = sorted[sorted.count / 2]
            let p99 = sorted[min(sorted.count - 1, Int((Double(sorted.count) * 0.99).rounded(.up)) - 1)]
            let answer = shown[query]!
            print(
                "export by \(query.split(separator: "=")[0]): \(answer.lines) lines (\(answer.services.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", "))), \(answer.bytes / 1024) KiB; p50 \(String(format: "%.0f", p50)) ms, p99 \(String(format: "%.0f", p99)) ms over \(values.count) (goal: under 1000 ms)"
            )
            let name = query.hasPrefix("email") ? "export_by_email" : "export_by_custom_id"
            print("figure=\(name)_p99 value=\(String(format: "%.0f", p99)) unit=ms ceiling=- ratio=- goal=<1000ms_for_\(answer.lines)_rows")
        }
        for process in [ingest, notifier, orchestrator] { process.signal(SIGTERM) }
        for process in [ingest, notifier, orchestrator] { _ = try await process.waitForExit() }
        await stack.shutdown()
    }
}
