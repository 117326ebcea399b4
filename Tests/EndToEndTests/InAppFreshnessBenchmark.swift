import Foundation
import HeraldTestSupport
import Shared
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Not a test: the freshness figures of scripts/bench/in-app (runs only with HERALD_BENCH=1, in release). herald-ingest
/// and herald-orchestrator as processes on the embedded broker, with their defaults; for each of `samples` users, a
/// server's write that puts the user in a message's audience, then one that takes the user out, each followed by the
/// user's app syncing every 5 ms: the time from the write's request to the first sync that shows the message (write →
/// visible), then to the first that no longer shows it (segment exit → gone).
@Suite("In-app freshness benchmark", .enabled(if: ProcessInfo.processInfo.environment["HERALD_BENCH"] != nil), .serialized)
struct InAppFreshnessBenchmark {
    static let samples = Int(ProcessInfo.processInfo.environment["HERALD_BENCH_SAMPLES"] ?? "") ?? 200

    static let configuration = StateMoveTests.projectAndApp + """
        ---
        kind: segment
        id: gold
        project: demo
        condition: c.tier = "gold"
        ---
        kind: in_app_message
        id: gold-offer
        project: demo
        type: slideup
        audience: gold
        reeligibility: always
        triggers: [{session_start: true}]
        variants: {default: {message: "For gold members"}}
        ---
        kind: in_app_message
        id: everyone
        project: demo
        type: slideup
        reeligibility: always
        triggers: [{session_start: true}]
        variants: {default: {message: "Hello"}}

        """

    @Test("write → visible and segment exit → gone, as an app's syncs see them")
    func freshness() async throws {
        let (stack, _, _) = try await StateMoveTests.makeStack()
        defer { try? FileManager.default.removeItem(atPath: stack.work) }
        try await stack.applyConfiguration(Self.configuration)
        let orchestrator = try stack.orchestrator("o1", environment: sampleApps.merging(StateMoveTests.benchEnvironment) { $1 })
        let ingest = try stack.ingest(environment: StateMoveTests.benchEnvironment)
        let ingestURL = "http://127.0.0.1:\(try await StateMoveTests.port(ingest))"
        let orchestratorURL = "http://127.0.0.1:\(try await StateMoveTests.port(orchestrator))"
        try await waitUntil("the orchestrator's partitions", timeout: .seconds(60)) {
            !orchestrator.logs("partition databases open").isEmpty || orchestrator.exitCode != nil
        }
        let rest = ["Authorization": "Bearer rest_demo_0123456789abcdef"]
        func tier(_ user: String, _ tier: String) async throws {
            let (status, body) = try await httpPost(
                "\(ingestURL)/v1/profiles/update", headers: rest,
                body: #"[{"identifiers":{"custom_id":"\#(user)"},"attributes":{"tier":"\#(tier)"}}]"#)
            guard status == 200 else { throw TimedOut(what: "profile update: \(status) \(body)") }
        }
        /// What each user's app holds: its last answer and that answer's tag, sent back with each sync (`If-None-Match`):
        /// a 304 says the answer it holds is still current (the partition answers it from its kept tag, without reading).
        var held: [String: (tag: String, body: String)] = [:]
        var revalidated = 0
        /// Syncs every 5 ms until `done` holds on the answer the app holds; returns the seconds since `start`.
        func until(_ user: String, from start: ContinuousClock.Instant, _ done: (String) -> Bool) async throws -> Double {
            let url = "\(orchestratorURL)/v1/app/in-app-messages?installation_id=I-\(user)&custom_id=\(user)"
            while true {
                var headers = signedAppHeaders(user)
                if let tag = held[user]?.tag { headers["If-None-Match"] = tag }
                let (status, fields, body) = try await httpGetHeaders(url, headers: headers)
                if status == 200, let tag = fields.first(where: { $0.key.lowercased() == "etag" })?.value { held[user] = (tag, body) }
                if status == 304 { revalidated += 1 }
                if status == 200 || status == 304, let answer = held[user]?.body, done(answer) {
                    let elapsed = ContinuousClock.now - start
                    return Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
                }
                guard ContinuousClock.now - start < .seconds(30) else { throw TimedOut(what: "\(user): no such answer in 30 s") }
                try await Task.sleep(for: .milliseconds(5))
            }
        }
        var visible: [Double] = []
        var gone: [Double] = []
        for index in 0..<Self.samples {
            let user = "b\(index)"
            let (identified, body) = try await httpPost(
                "\(ingestURL)/v1/app/identify", headers: signedAppHeaders(user), body: #"{"installation_id":"I-\#(user)","custom_id":"\#(user)"}"#)
            guard identified == 200 else { throw TimedOut(what: "identify: \(identified) \(body)") }
            _ = try await until(user, from: .now) { $0.contains(#""everyone""#) }
            let entered = ContinuousClock.now
            try await tier(user, "gold")
            visible.append(try await until(user, from: entered) { $0.contains("gold-offer") })
            let left = ContinuousClock.now
            try await tier(user, "silver")
            gone.append(try await until(user, from: left) { !$0.contains("gold-offer") })
        }
        func percentile(_ values: [Double], _ p: Double) -> Double {
            let sorted = values.sorted()
            return sorted[min(sorted.count - 1, Int((Double(sorted.count) * p).rounded(.up)) - 1)]
        }
        func ms(_ seconds: Double) -> String { String(format: "%.0f ms", seconds * 1000) }
        print(
            """
            in-app freshness benchmark (\(ProcessInfo.processInfo.activeProcessorCount) cores, \(StateMoveTests.partitions) partitions, \(Self.samples) users, syncs every 5 ms)
              write -> visible in a sync     p50 \(ms(percentile(visible, 0.5)))   p99 \(ms(percentile(visible, 0.99)))   max \(ms(visible.max() ?? 0))
              segment exit -> gone           p50 \(ms(percentile(gone, 0.5)))   p99 \(ms(percentile(gone, 0.99)))   max \(ms(gone.max() ?? 0))
              revalidations answered 304     \(revalidated)
            figure-line visible_p99_ms=\(Int(percentile(visible, 0.99) * 1000)) gone_p99_ms=\(Int(percentile(gone, 0.99) * 1000))
            """)
        orchestrator.signal(SIGTERM)
        ingest.signal(SIGTERM)
        _ = try await orchestrator.waitForExit()
        _ = try await ingest.waitForExit()
        await stack.shutdown()
    }
}
