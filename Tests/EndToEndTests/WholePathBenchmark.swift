import Foundation
import HeraldTestSupport
import ProviderSimulators
import Shared
import Testing

/// Not a test: figures for scripts/bench/path (runs only with HERALD_BENCH=1, in release). The three services as
/// processes on the embedded broker, the APNs simulator over TLS, users with push tokens, and events posted over HTTP
/// at a steady rate, each triggering a push: the time from each event's ingest to the provider's answer, and per hop
/// (ingest → decision, decision → provider request, provider request → answer recorded).
@Suite("Whole path benchmark", .enabled(if: ProcessInfo.processInfo.environment["HERALD_BENCH"] != nil), .serialized)
struct WholePathBenchmark {
    static let rate = Int(ProcessInfo.processInfo.environment["HERALD_BENCH_RATE"] ?? "") ?? 1000
    static let seconds = Int(ProcessInfo.processInfo.environment["HERALD_BENCH_SECONDS"] ?? "") ?? 10
    static let users = 1000
    /// `fetch.wait.max.ms` of the orchestrator and the notifier: 2 removes the embedded broker's idle-fetch hold
    /// (docs/performance.md), so that the figure is the product's.
    static let fetchWait = Int(ProcessInfo.processInfo.environment["HERALD_BENCH_FETCH_WAIT_MS"] ?? "") ?? 2

    static let configuration = StateMoveTests.projectAndApp + """
        ---
        kind: template
        id: tapped
        project: demo
        channel: push
        variants:
          default:
            title: Thanks
            body: 'You tapped {{ event.item | "it" }}'
        ---
        kind: campaign
        id: on-tap
        project: demo
        type: transactional
        trigger: {event: TAP}
        reeligibility: always
        messages: [{channel: push, template: tapped, app: demo-ios}]

        """

    /// Each user's installation with notifications allowed and a push token, straight to herald.ingest.
    static func setup(_ range: Range<Int> = 0..<users) -> [KafkaOutgoingRecord] {
        var records: [KafkaOutgoingRecord] = []
        for user in range {
            for (step, (op, fields)) in [
                (IngestOp.identify, [JSONMember]()),
                (.pushToken, [JSONMember("push", .object([
                    JSONMember("token", .string(String(format: "%064x", user))), JSONMember("environment", .string("production")),
                ]))]),
                (.installation, [JSONMember("installation", .object([JSONMember("notification_permission", .string("allowed"))]))]),
            ].enumerated() {
                let record = IngestRecord(
                    op: op, id: "setup-\(user)-\(step)", project: "demo", source: .app(id: "demo-ios", dev: false),
                    customID: "u\(user)", installationID: "I-\(user)", receivedAt: Date(), fields: fields)
                records.append(KafkaOutgoingRecord(topic: HeraldTopic.ingest.name, key: record.key, value: record.value))
            }
        }
        return records
    }

    @Test("event to provider answer, per hop, at a steady rate")
    func wholePath() async throws {
        let (stack, simulators, apns) = try await StateMoveTests.makeStack()
        defer { try? FileManager.default.removeItem(atPath: stack.work) }
        try await stack.applyConfiguration(Self.configuration)
        let kafka = ["KAFKA_FETCH_WAIT_MAX_MS": String(Self.fetchWait)].merging(StateMoveTests.benchEnvironment) { $1 }
        let orchestrator = try stack.orchestrator("o1", environment: kafka)
        let notifier = try stack.notifier("n1", environment: kafka)
        let ingest = try stack.ingest(environment: StateMoveTests.benchEnvironment)
        let ingestPort = try await StateMoveTests.port(ingest)
        for process in [orchestrator, notifier] {
            try await waitUntil("\(process.name)'s partitions", timeout: .seconds(60)) {
                !process.logs("partition databases open").isEmpty || process.exitCode != nil
            }
        }

        // Every user reachable, and the notifier holding their contacts, before the first event.
        try await stack.produce(Self.setup())
        let reachable = Locked(Set<String>())
        _ = try await readTopic(
            HeraldTopic.contacts.name, bootstrap: stack.cluster.bootstrapServers, logger: quietLogger, timeout: .seconds(120)
        ) { records in
            reachable.withLock { keys in
                for record in records {
                    guard let key = record.keyString, let value = record.value,
                        let contact = try? Wire.decode(ContactSnapshot.self, from: value)
                    else { continue }
                    if contact.installations.contains(where: \.pushReachable) { keys.insert(key) } else { keys.remove(key) }
                }
                return keys.count == Self.users
            }
        }
        try await Task.sleep(for: .seconds(3))
        simulators.reset()

        // Reports as they come.
        var readerConfig = KafkaConsumerConfiguration(
            client: KafkaClientSettings(bootstrapServers: stack.cluster.bootstrapServers), clientID: "bench-reports",
            groupID: "bench-\(UUID().uuidString)", topics: [HeraldTopic.deliveries.name])
        readerConfig.fetchMaxWait = .milliseconds(Int64(Self.fetchWait))
        let reader = try KafkaConsumer(configuration: readerConfig, listener: FromBeginningListener(), logger: quietLogger)
        let reports = Locked<[String: DeliveryReport]>([:])
        let reading = Task {
            for try await batch in reader.batches() {
                let sent = batch.records.compactMap { record in
                    (try? Wire.decode(DeliveryReport.self, from: record.value ?? [])).flatMap { $0.outcome == .sent ? $0 : nil }
                }
                reports.withLock { for report in sent { $0[report.sendID ?? ""] = report } }
            }
        }
        try await waitUntil("the reader's partitions") { !reader.assignment.isEmpty }

        // Events over HTTP: every 10 ms one request to the server API with the tick's events, one per user in turn.
        let total = Self.rate * Self.seconds
        let perTick = max(1, Self.rate / 100)
        let answers = Locked<[Double]>([])
        let start = Date()
        var posted = 0
        while posted < total {
            let due = start.addingTimeInterval(Double(posted / perTick) * 0.01)
            if due > Date() { try await Task.sleep(for: .seconds(due.timeIntervalSinceNow)) }
            let count = min(perTick, total - posted)
            let body = (posted..<(posted + count)).map { n in
                #"{"identifiers":{"custom_id":"u\#(n % Self.users)"},"events":[{"name":"tap","id":"tap-\#(n)","attributes":{"item":"i\#(n % 50)"}}]}"#
            }.joined(separator: ",")
            posted += count
            Task {
                let sent = Date()
                let (status, _) = try await httpPost(
                    "http://127.0.0.1:\(ingestPort)/v1/profiles/update",
                    headers: ["Authorization": "Bearer rest_demo_0123456789abcdef"], body: "[\(body)]")
                if status == 200 { answers.withLock { $0.append(Date().timeIntervalSince(sent) * 1000) } }
            }
        }
        let produceSeconds = Date().timeIntervalSince(start)
        try await waitUntil("every push answered", timeout: .seconds(180)) { reports.withLock { $0.count } >= total }
        reader.stop()
        try? await reading.value
        await reader.close()

        // The provider's side: when each push reached the simulator.
        var arrivals: [String: Date] = [:]
        for received in simulators.received("apns") {
            guard let payload = try? JSONParser.parse(Array(received.body.utf8)),
                case .string(let sendID)? = payload["com.herald"]?["i"]
            else { continue }
            arrivals[sendID] = min(arrivals[sendID] ?? received.at, received.at)
        }
        struct Hops { var decide: [Double] = [], request: [Double] = [], answer: [Double] = [], total: [Double] = [] }
        var hops = Hops()
        var all: [Double] = []
        for report in reports.withLock({ Array($0.values) }) {
            guard let triggered = report.triggeredAt, let decided = report.decidedAt, let arrival = arrivals[report.sendID ?? ""]
            else { continue }
            let total = report.at.timeIntervalSince(triggered) * 1000
            all.append(total)
            // The steady state: the first second is the services' first batches.
            guard triggered >= start.addingTimeInterval(1) else { continue }
            hops.decide.append(decided.timeIntervalSince(triggered) * 1000)
            hops.request.append(arrival.timeIntervalSince(decided) * 1000)
            hops.answer.append(report.at.timeIntervalSince(arrival) * 1000)
            hops.total.append(total)
        }
        func percentile(_ values: [Double], _ p: Double) -> Double {
            let sorted = values.sorted()
            return sorted.isEmpty ? .nan : sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))]
        }
        func line(_ name: String, _ values: [Double]) -> String {
            "  " + name.padding(toLength: 40, withPad: " ", startingAt: 0)
                + String(format: " p50 %7.1f ms   p99 %7.1f ms   max %7.1f ms", percentile(values, 0.5), percentile(values, 0.99), values.max() ?? .nan)
        }
        print(
            """
            whole path benchmark (\(ProcessInfo.processInfo.activeProcessorCount) cores, \(StateMoveTests.partitions) partitions, one ingest, orchestrator and notifier, fetch.wait.max.ms \(Self.fetchWait))
              \(total) events at \(Self.rate)/s for \(Self.seconds) s over HTTP (posted in \(String(format: "%.1f", produceSeconds)) s) -> \(reports.withLock { $0.count }) pushes answered, \(arrivals.count) reached APNs
            \(line("HTTP answer (broker acknowledged)", answers.withLock { $0 }))
            \(line("ingest -> decision", hops.decide))
            \(line("decision -> APNs request", hops.request))
            \(line("APNs request -> answer recorded", hops.answer))
            \(line("event -> provider answer (steady)", hops.total))
            \(line("event -> provider answer (whole run)", all))
            """)
        printFigure("event_to_provider_p50_at_\(Self.rate)", percentile(hops.total, 0.5), unit: "ms", goal: "-")
        printFigure(
            "event_to_provider_p99_at_\(Self.rate)", percentile(hops.total, 0.99), unit: "ms",
            goal: Self.rate == 2000 ? "<100" : "<100_at_2000/s")
        printFigure("hop_ingest_to_decision_p99", percentile(hops.decide, 0.99), unit: "ms", goal: "-")
        printFigure("hop_decision_to_provider_request_p99", percentile(hops.request, 0.99), unit: "ms", goal: "-")
        printFigure("hop_provider_request_to_answer_p99", percentile(hops.answer, 0.99), unit: "ms", goal: "-")

        for process in [ingest, orchestrator, notifier] { process.signal(SIGTERM) }
        for process in [ingest, orchestrator, notifier] { _ = try? await process.waitForExit() }
        await apns.stop()
        await stack.shutdown()
        #expect(reports.withLock { $0.count } >= total)
    }
}
