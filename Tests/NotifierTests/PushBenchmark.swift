import Crypto
import CurlClient
import Foundation
import HeraldTestSupport
import PartitionStore
import ProviderSimulators
import Shared
import Testing

@testable import Notifier

/// Not a test: figures for scripts/bench/push (runs only with HERALD_BENCH=1, in release), against an APNs simulator
/// process the script started (HERALD_BENCH_APNS_URL, its certificate in HERALD_BENCH_CA_FILE), the endpoint h2load
/// measured just before.
@Suite("Push throughput benchmark", .enabled(if: ProcessInfo.processInfo.environment["HERALD_BENCH"] != nil), .serialized)
struct PushThroughputBenchmark {
    static let environment = ProcessInfo.processInfo.environment
    static let sends = Int(environment["HERALD_BENCH_SENDS"] ?? "") ?? 20_000
    static let url = environment["HERALD_BENCH_APNS_URL"] ?? "https://127.0.0.1:9101"
    static let caFile = environment["HERALD_BENCH_CA_FILE"]
    static let window = Int(environment["HERALD_BENCH_WINDOW"] ?? "") ?? 500

    func provider(_ driver: CurlDriver) throws -> APNsProvider {
        var settings = APNsProvider.Settings()
        settings.productionURL = Self.url
        settings.sandboxURL = Self.url
        settings.maxInFlight = Self.window
        return APNsProvider(
            driver: driver,
            signer: try APNsTokenSigner(p8: P256.Signing.PrivateKey().pemRepresentation, keyID: "KEY1234567", teamID: "TEAM123456"),
            settings: settings, bundleIDs: ["demo/demo-ios": "com.example.demo"])
    }

    static func rate(_ count: Int, _ elapsed: Duration) -> Double {
        Double(count) / elapsed.timeInterval
    }

    @Test("push sends per second: the APNs provider alone, then the whole notifier path")
    func pushThroughput() async throws {
        print("push benchmark: \(Self.sends) sends to \(Self.url), at most \(Self.window) streams in flight")

        // 1. The provider alone: JWT, payload, HTTP/2 request through the curl driver, answer classified.
        let driver = CurlDriver(maxConcurrentStreams: Self.window, caFile: Self.caFile)
        let apns = try provider(driver)
        let target = DeliveryTarget(id: "i", address: token64, installationID: "i", app: "demo-ios", platform: .ios, environment: .production)
        let started = ContinuousClock.now
        var refused: [String: Int] = [:]
        let accepted = await withTaskGroup(of: ProviderOutcome.self) { group in
            var next = 0
            var accepted = 0
            func add() {
                let attempt = DeliveryAttempt(request: sendRequest(id: "bench-\(next)"), target: target, attempt: 1)
                group.addTask { await apns.deliver(attempt) }
                next += 1
            }
            while next < min(Self.window, Self.sends) { add() }
            for await outcome in group {
                if case .accepted = outcome { accepted += 1 } else { refused["\(outcome)", default: 0] += 1 }
                if next < Self.sends { add() }
            }
            return accepted
        }
        if !refused.isEmpty { print("provider path: not accepted: \(refused)") }
        let providerElapsed = ContinuousClock.now - started
        #expect(accepted == Self.sends)
        print(String(format: "provider path: %.0f sends/s (%d accepted in %@)", Self.rate(accepted, providerElapsed), accepted, "\(providerElapsed)"))

        // 2. The notifier: sends stored as the consumer stores them, then the push worker claims, delivers, writes the
        // ledger and reports on herald.deliveries; timed until the last ledger row is `sent`.
        let harness = try await NotifierHarness()
        let batch = 1000
        for first in stride(from: 0, to: Self.sends, by: batch) {
            let range = first..<min(first + batch, Self.sends)
            try await harness.feed(range.map { n in
                (.contacts, "demo/u\(n)", Array(Self.contact(n).utf8))
            })
            try await harness.feed(range.map { n in
                let send = sendRequest(id: "send-\(n)", key: "demo/u\(n)")
                return (.sendsPush, "demo/u\(n)", try! Wire.encode(send))
            })
        }
        let notifierStarted = ContinuousClock.now
        try await harness.startWorkers([.push], providers: [.push: ["ios": apns]])
        var sent = 0
        var last = ContinuousClock.now
        while sent < Self.sends {
            try await Task.sleep(for: .milliseconds(50))
            let states = try await harness.partitions.ledgerStates(.push)
            sent = states["sent"] ?? 0
            let failed = (states["failed"] ?? 0) + (states["suppressed"] ?? 0)
            if failed > 0 { Issue.record("ledger: \(states)"); break }
            if ContinuousClock.now - last > .seconds(5) {
                print("  … \(sent) sent")
                last = ContinuousClock.now
            }
        }
        let notifierElapsed = ContinuousClock.now - notifierStarted
        print(String(format: "notifier path: %.0f sends/s (%d sent in %@)", Self.rate(sent, notifierElapsed), sent, "\(notifierElapsed)"))

        // 3. The ledger handover: a new owner without the database reads the partition's reports back, in the
        // consumer's batches of 500 (what every instance also does with its own reports as they come). The embedded
        // broker keeps about 5 MiB of a partition, so with many sends the oldest reports are gone: the new owner then
        // knows only the sends whose reports it read, which is what the check below expects.
        // The ledger says sent as soon as a result is recorded; its report may still be on its way to the broker.
        try await waitUntil("every report produced") { await harness.partitions.owner.flush(0) }
        let (low, high) = try await harness.watermarks(TopicPartition(HeraldTopic.deliveries.name, 0))
        let reports = try await readTopic(
            HeraldTopic.deliveries.name, bootstrap: harness.cluster.bootstrapServers, logger: harness.logger,
            timeout: .seconds(120)
        ) { ($0.last?.offset ?? -1) >= high - 1 }
        let sentIDs = Set(try reports.compactMap { record -> String? in
            let report = try Wire.decode(DeliveryReport.self, from: record.value ?? [])
            return report.outcome == .sent ? report.sendID : nil
        })
        try await harness.handOver()
        let handoverStarted = ContinuousClock.now
        for first in stride(from: 0, to: reports.count, by: 500) {
            try await harness.partitions.apply(KafkaBatch(records: Array(reports[first..<min(first + 500, reports.count)])))
        }
        let handoverElapsed = ContinuousClock.now - handoverStarted
        #expect(await !harness.partitions.isHandingOver(0))
        #expect(try await harness.partitions.ledgerStates(.push) == ["sent": sentIDs.count])
        if low == 0 { #expect(sentIDs.count == Self.sends) }
        let retained = low == 0 ? "" : String(format: "; the broker had dropped the first %lld of %lld", low, high)
        print(String(format: "ledger handover: %.0f reports/s (%d reports in %@%@)", Self.rate(reports.count, handoverElapsed), reports.count, "\(handoverElapsed)", retained))
        await harness.shutdown()
        driver.shutdown()
    }

    static func contact(_ n: Int) -> String {
        """
        {"v":1,"kind":"contact","project":"demo","custom_id":"u\(n)","email":null,"sms":null,
         "installations":[\(installationJSON("i-\(n)"))],"updated_at":"2026-01-01T00:00:00Z"}
        """
    }
}
