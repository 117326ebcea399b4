import Foundation
import HeraldTestSupport
import Shared
import Testing

/// Not a test: figures for scripts/bench/campaigns (runs only with HERALD_BENCH=1, in release). An orchestrator process
/// on the embedded broker, a campaign on an event, events produced to herald.ingest at a steady rate, and the time from
/// each event's ingest time to its send request read back from herald.sends.push.
@Suite("Campaign latency benchmark", .enabled(if: ProcessInfo.processInfo.environment["HERALD_BENCH"] != nil), .serialized)
struct CampaignLatencyBenchmark {
    static let rate = Int(ProcessInfo.processInfo.environment["HERALD_BENCH_RATE"] ?? "") ?? 500
    static let seconds = Int(ProcessInfo.processInfo.environment["HERALD_BENCH_SECONDS"] ?? "") ?? 20
    /// `fetch.wait.max.ms` of the orchestrator and of the reader. The embedded broker holds a fetch that finds nothing
    /// new for this long even when records arrive meanwhile (a real broker answers as soon as they do): with
    /// librdkafka's wait, most of each hop is the embedded broker's. 100 is Herald's default.
    /// The events go round this many profiles (the first round creates them).
    static let profiles = Int(ProcessInfo.processInfo.environment["HERALD_BENCH_PROFILES"] ?? "") ?? 5000
    static let fetchWait = Int(ProcessInfo.processInfo.environment["HERALD_BENCH_FETCH_WAIT_MS"] ?? "") ?? 2

    @Test("event to send request, p50 and p99, at a steady rate")
    func latency() async throws {
        let (cluster, producer) = try OrchestratorEndToEndTests.clusterAndProducer()
        let objects = [
            #"{"kind":"project","id":"demo"}"#,
            #"{"kind":"template","id":"t","project":"demo","channel":"push","variants":{"default":{"body":"Hi {{ c.first_name | \"there\" }}, {{ event.product }}"}}}"#,
            #"{"kind":"campaign","id":"now","project":"demo","trigger":{"event":"ADD_TO_CART"},"reeligibility":"always","messages":[{"channel":"push","template":"t"}]}"#,
        ]
        var configRecords: [KafkaOutgoingRecord] = []
        for text in objects {
            let node = ConfigNode(json: try JSONParser.parse(Array(text.utf8)))
            guard case .string(let kind)? = node["kind"]?.value, case .string(let id)? = node["id"]?.value else { continue }
            var project: String?
            if case .string(let name)? = node["project"]?.value { project = name }
            configRecords.append(
                KafkaOutgoingRecord(
                    topic: HeraldTopic.config.name, key: Array(HeraldConfiguration.key(kind: kind, project: project, id: id).utf8),
                    value: ConfigRecord(file: "bench", appliedAt: Date(), object: node).value))
        }
        _ = try await producer.send(configRecords)

        let data = FileManager.default.temporaryDirectory.appendingPathComponent("herald-bench-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: data) }
        let (orchestrator, _) = try await OrchestratorEndToEndTests.start(
            cluster, data: data, environment: ["KAFKA_FETCH_WAIT_MAX_MS": String(Self.fetchWait)])
        try await waitUntil("the configuration loaded and the partitions open") {
            !orchestrator.logs("configuration loaded").isEmpty && !orchestrator.logs("partition databases open").isEmpty
        }

        // Reads sends as they come, noting when each arrived.
        var consumerConfig = KafkaConsumerConfiguration(
            client: KafkaClientSettings(bootstrapServers: cluster.bootstrapServers), clientID: "bench-reader",
            groupID: "bench-\(UUID().uuidString)", topics: [HeraldTopic.sendsPush.name])
        consumerConfig.sessionTimeout = .seconds(3)
        consumerConfig.fetchMaxWait = .milliseconds(Int64(Self.fetchWait))
        let consumer = try KafkaConsumer(configuration: consumerConfig, listener: FromBeginningListener(), logger: quietLogger)
        /// (event time, latency in ms) of each send request read.
        let latencies = Locked<[(at: Date, ms: Double)]>([])
        let reading = Task {
            for try await batch in consumer.batches() {
                let now = Date()
                let values = batch.records.compactMap { record -> (at: Date, ms: Double)? in
                    guard let value = record.value, let send = try? Wire.decode(SendRequest.self, from: value) else { return nil }
                    if ProcessInfo.processInfo.environment["HERALD_BENCH_TRACE"] != nil {
                        let produced = record.timestampMs.map { Double($0) - send.trigger.at.timeIntervalSince1970 * 1000 } ?? -1
                        print("trace at=\(send.trigger.at.timeIntervalSince1970) decided=\(send.decidedAt.timeIntervalSince(send.trigger.at) * 1000) produced=\(produced) read=\(now.timeIntervalSince(send.trigger.at) * 1000) key=\(send.profileKey)")
                    }
                    return (send.trigger.at, now.timeIntervalSince(send.trigger.at) * 1000)
                }
                latencies.withLock { $0 += values }
            }
        }
        // Measured from a steady state: both group members have their partitions before the first event.
        try await waitUntil("the reader's partitions") { !consumer.assignment.isEmpty }

        let total = Self.rate * Self.seconds
        let tick = 0.01
        let perTick = max(1, Int(Double(Self.rate) * tick))
        let start = Date()
        var sent = 0
        while sent < total {
            let due = start.addingTimeInterval(Double(sent / perTick) * tick)
            if due > Date() { try await Task.sleep(for: .seconds(due.timeIntervalSinceNow)) }
            var records: [KafkaOutgoingRecord] = []
            for _ in 0..<min(perTick, total - sent) {
                let event = JSONValue.object([
                    JSONMember("name", .string("ADD_TO_CART")),
                    JSONMember("attributes", .object([JSONMember("product.s", .string("item-\(sent % 50)"))])),
                ])
                let ingest = IngestRecord(
                    op: .event, id: "e\(sent)", project: "demo", source: .server, customID: "user-\(sent % Self.profiles)",
                    installationID: nil, receivedAt: Date(), fields: [JSONMember("event", event)])
                records.append(KafkaOutgoingRecord(topic: HeraldTopic.ingest.name, key: ingest.key, value: ingest.value))
                sent += 1
            }
            // Not awaited one by one: the producer batches, and the send time is in each record.
            Task { [records] in _ = try? await producer.send(records) }
        }
        let produceSeconds = Date().timeIntervalSince(start)
        try await waitUntil("every send request", timeout: .seconds(120)) { latencies.withLock { $0.count } >= total }
        consumer.stop()
        try? await reading.value
        await consumer.close()

        // The first second is the orchestrator's start (its first batches, statements compiled, caches cold): the whole
        // run is printed, and the figures are the steady state after it.
        let all = latencies.withLock { $0 }
        let sorted = all.map(\.ms).sorted()
        let steady = all.filter { $0.at >= start.addingTimeInterval(1) }.map(\.ms).sorted()
        print(
            """
            campaign latency benchmark (\(ProcessInfo.processInfo.activeProcessorCount) cores, 4 partitions, one orchestrator process, fetch.wait.max.ms \(Self.fetchWait))
              \(total) events at \(Self.rate)/s for \(Self.seconds) s (produced in \(String(format: "%.1f", produceSeconds)) s) -> \(sorted.count) send requests
              event ingested -> send request read from herald.sends.push: p50 \(String(format: "%.1f", percentile(sorted, 0.5))) ms, p99 \(String(format: "%.1f", percentile(sorted, 0.99))) ms, max \(String(format: "%.1f", sorted.last ?? 0)) ms
              after the first second (steady):                             p50 \(String(format: "%.1f", percentile(steady, 0.5))) ms, p99 \(String(format: "%.1f", percentile(steady, 0.99))) ms, max \(String(format: "%.1f", steady.last ?? 0)) ms
            """)
        printFigure("event_to_send_p50_at_\(Self.rate)", percentile(steady, 0.5), unit: "ms", goal: "-")
        printFigure(
            "event_to_send_p99_at_\(Self.rate)", percentile(steady, 0.99), unit: "ms", goal: Self.rate == 2000 ? "<50" : "<50_at_2000/s")
        printFigure("event_to_send_p99_whole_run_at_\(Self.rate)", percentile(sorted, 0.99), unit: "ms", goal: "-")
        if ProcessInfo.processInfo.environment["HERALD_BENCH_TRACE"] != nil {
            for line in orchestrator.output where !line.contains("\"debug\"") { print("orchestrator: \(line)") }
        }
        orchestrator.signal(SIGTERM)
        _ = try await orchestrator.waitForExit()
        await producer.shutdown()
        await cluster.shutdown()
        #expect(sorted.count == total)
    }
}
