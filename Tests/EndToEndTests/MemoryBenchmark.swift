import Foundation
import HeraldTestSupport
import ProviderSimulators
import Shared
import Testing

/// Not a test: figures for scripts/bench/memory (runs only with HERALD_BENCH=1, in release). The three services as
/// processes on the embedded broker; `HERALD_BENCH_PROFILES` users with a push token fed to herald.ingest, then a
/// scheduled broadcast to all of them through the APNs simulator: each service's resident size (VmRSS) after the
/// profiles and after the broadcast, and its peak (VmHWM).
@Suite("Memory benchmark", .enabled(if: ProcessInfo.processInfo.environment["HERALD_BENCH"] != nil), .serialized)
struct MemoryBenchmark {
    static let profiles = Int(ProcessInfo.processInfo.environment["HERALD_BENCH_PROFILES"] ?? "") ?? 100_000
    /// Users fed at a time: the embedded broker keeps about 5 MiB of each partition, so the feed waits for the
    /// orchestrator to have applied a chunk before the next (a real broker keeps everything).
    static let chunk = 20_000
    static let environment = StateMoveTests.benchEnvironment

    /// A service's resident and peak resident sizes, in MiB (`/proc/<pid>/status`).
    static func memory(_ pid: pid_t) -> (rss: Double, peak: Double) {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return (.nan, .nan) }
        func field(_ name: String) -> Double {
            guard let line = status.split(separator: "\n").first(where: { $0.hasPrefix(name + ":") }),
                let kilobytes = Double(line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "")
            else { return .nan }
            return kilobytes / 1024
        }
        return (field("VmRSS"), field("VmHWM"))
    }

    static func describe(_ sizes: [String: (rss: Double, peak: Double)]) -> String {
        sizes.sorted { $0.key < $1.key }.map { "\($0.key) \(Int($0.value.rss))" }.joined(separator: ", ")
    }

    /// The sum of a counter's series on a service's /metrics whose line contains `filter`.
    static func counter(_ port: Int, _ name: String, _ filter: String) async -> Double {
        guard let (status, text) = try? await httpGet("http://127.0.0.1:\(port)/metrics"), status == 200 else { return 0 }
        return text.split(separator: "\n")
            .filter { $0.hasPrefix(name + "{") && $0.contains(filter) }
            .compactMap { $0.split(separator: " ").last.flatMap { Double($0) } }
            .reduce(0, +)
    }

    @Test("resident size of each service with many profiles and a broadcast to all of them")
    func memory() async throws {
        let (stack, _, apns) = try await StateMoveTests.makeStack()
        defer { try? FileManager.default.removeItem(atPath: stack.work) }
        try await stack.applyConfiguration(StateMoveTests.configuration(broadcastAt: nil))
        // A line per decision and per delivery would be a million lines kept by this process: only the rest is kept.
        let keep: @Sendable (String) -> Bool = { !$0.contains(#""msg":"delivery""#) && !$0.contains(#""msg":"send decided""#) }
        let orchestrator = try stack.orchestrator("o1", environment: Self.environment, keep: keep)
        let notifier = try stack.notifier("n1", environment: Self.environment, keep: keep)
        let ingest = try stack.ingest(environment: Self.environment)
        let services = [("ingest", ingest), ("orchestrator", orchestrator), ("notifier", notifier)]
        let orchestratorPort = try await StateMoveTests.port(orchestrator)
        let notifierPort = try await StateMoveTests.port(notifier)
        let ingestPort = try await StateMoveTests.port(ingest)
        for process in [orchestrator, notifier] {
            try await waitUntil("\(process.name)'s partitions", timeout: .seconds(60)) {
                !process.logs("partition databases open").isEmpty || process.exitCode != nil
            }
        }
        func snapshot() -> [String: (rss: Double, peak: Double)] {
            Dictionary(uniqueKeysWithValues: services.map { ($0.0, Self.memory($0.1.pid)) })
        }
        let atStart = snapshot()

        // The profiles, a chunk at a time: each user's three records give two contact snapshots (created, then
        // reachable), so the orchestrator has applied a chunk when it has produced them.
        let started = ContinuousClock.now
        var last = ContinuousClock.now
        for first in stride(from: 0, to: Self.profiles, by: Self.chunk) {
            let users = first..<min(first + Self.chunk, Self.profiles)
            try await stack.produce(WholePathBenchmark.setup(users))
            let snapshots = Double(2 * users.upperBound)
            try await waitUntil("the orchestrator to apply the feed", timeout: .seconds(600)) {
                await Self.counter(orchestratorPort, "herald_records_produced_total", "herald.contacts") >= snapshots
            }
            if ContinuousClock.now - last > .seconds(10) {
                print("  … \(users.upperBound) profiles fed; resident MiB: \(Self.describe(snapshot()))")
                last = ContinuousClock.now
            }
        }
        // The ingest's side: a minute's worth of HTTP requests of 100 events (it keeps no profile state).
        for batch in 0..<100 {
            let body = (0..<100).map { n in
                #"{"identifiers":{"custom_id":"u\#((batch * 100 + n) % Self.profiles)"},"events":[{"name":"seen","id":"seen-\#(batch)-\#(n)"}]}"#
            }.joined(separator: ",")
            let (status, _) = try await httpPost(
                "http://127.0.0.1:\(ingestPort)/v1/profiles/update",
                headers: ["Authorization": "Bearer rest_demo_0123456789abcdef"], body: "[\(body)]")
            #expect(status == 200)
        }
        try await Task.sleep(for: .seconds(3))
        let feedSeconds = (ContinuousClock.now - started).timeInterval
        let afterProfiles = snapshot()

        // The broadcast: to every reachable profile, a few seconds from now.
        try await stack.applyConfiguration(StateMoveTests.configuration(broadcastAt: Date().addingTimeInterval(5)))
        let broadcastStarted = ContinuousClock.now
        var answered = 0.0
        last = ContinuousClock.now
        var progressed = ContinuousClock.now
        while answered < Double(Self.profiles) {
            // Stalled (sends the embedded broker dropped, say): the figures are still the services' sizes.
            guard ContinuousClock.now - progressed < .seconds(60) else {
                print("  broadcast stalled at \(Int(answered)) pushes answered")
                break
            }
            try await Task.sleep(for: .seconds(1))
            let now = await Self.counter(notifierPort, "herald_deliveries_total", #"channel="push""#)
            if now > answered { progressed = ContinuousClock.now }
            answered = now
            if ContinuousClock.now - last > .seconds(15) {
                print("  … \(Int(answered)) pushes answered; resident MiB: \(Self.describe(snapshot()))")
                last = ContinuousClock.now
            }
        }
        let broadcastSeconds = (ContinuousClock.now - broadcastStarted).timeInterval
        let sent = await Self.counter(notifierPort, "herald_deliveries_total", #"outcome="sent""#)
        let afterBroadcast = snapshot()

        func row(_ name: String) -> String {
            let columns = [atStart[name]!.rss, afterProfiles[name]!.rss, afterBroadcast[name]!.rss, afterBroadcast[name]!.peak]
            return "  " + name.padding(toLength: 14, withPad: " ", startingAt: 0)
                + columns.map { String(format: "%10.0f", $0) }.joined()
        }
        print(
            """
            memory benchmark (\(StateMoveTests.partitions) partitions, one ingest, orchestrator and notifier)
              \(Self.profiles) profiles fed in \(String(format: "%.0f", feedSeconds)) s; broadcast of \(Int(answered)) pushes (\(Int(sent)) sent) in \(String(format: "%.0f", broadcastSeconds)) s
              resident MiB      start  profiles broadcast      peak
            \(services.map { row($0.0) }.joined(separator: "\n"))
            """)
        for (name, _) in services {
            printFigure("rss_\(name)_after_profiles_\(Self.profiles)", afterProfiles[name]!.rss, unit: "MiB", goal: "<300")
            printFigure("rss_\(name)_peak_broadcast_\(Self.profiles)", afterBroadcast[name]!.peak, unit: "MiB", goal: "<300")
        }

        for (_, process) in services { process.signal(SIGTERM) }
        for (_, process) in services { _ = try? await process.waitForExit() }
        await apns.stop()
        await stack.shutdown()
        #expect(answered >= Double(Self.profiles))
    }
}
