import Foundation
import HeraldTestSupport
import Shared
import Testing

/// One output that can never be produced must not stall its partition (issue 33's probe): a campaign trigger for a
/// profile that does not exist yet is accepted by the ingest (its record under the producer's 1 MB), and its dead letter
/// (the record whole, as a JSON string: each quote escaped once more) is over it. Before, the orchestrator tried to produce it every second from then on, and
/// nothing else of that partition went out: here, the contact snapshot of the next write for the same profile.
@Suite("An output too large for the broker", .timeLimit(.minutes(5)))
struct UnproducibleOutputTests {
    @Test("becomes a small dead letter, and the partition's next outputs go out")
    func oversizedDeadLetter() async throws {
        // config/example: its login-code campaign is API-triggered.
        let (cluster, ingest, ingestPort) = try await startIngest(config: repositoryFile("config/example"))
        let data = FileManager.default.temporaryDirectory.appendingPathComponent("herald-e2e-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: data) }
        let (orchestrator, orchestratorPort) = try await OrchestratorEndToEndTests.start(cluster, data: data)
        let rest = ["Authorization": "Bearer rest_demo_0123456789abcdef"]
        // 300,000 quotes: 600 kB escaped in the request and in the ingest record, 1.2 MB in the dead letter.
        let huge = String(repeating: #"\""#, count: 300_000)
        let (triggerStatus, triggerBody) = try await httpPost(
            "http://127.0.0.1:\(ingestPort)/v1/campaigns/trigger", headers: rest,
            body: #"{"campaign_id":"login-code","recipients":[{"custom_id":"victim","trigger_properties":{"blob":"\#(huge)"}}]}"#)
        #expect(triggerStatus == 200, "\(triggerBody.prefix(300))")
        let (updateStatus, _) = try await httpPost(
            "http://127.0.0.1:\(ingestPort)/v1/profiles/update", headers: rest,
            body: #"[{"identifiers":{"custom_id":"victim"},"attributes":{"$email_address":"victim@example.com"}}]"#)
        #expect(updateStatus == 200)

        // The next write's contact snapshot goes out: the partition did not stall behind the dead letter.
        _ = try await readTopic(HeraldTopic.contacts.name, bootstrap: cluster.bootstrapServers, logger: quietLogger) { records in
            records.contains { $0.keyString == "demo/victim" && $0.value.map { String(decoding: $0, as: UTF8.self).contains("victim@example.com") } == true }
        }
        // In the dead letter's place, a stub: the output's topic and key, its size and why, without its value.
        let letters = try await readTopic(HeraldTopic.dlq.name, bootstrap: cluster.bootstrapServers, logger: quietLogger) { records in
            records.contains { $0.keyString == "demo/victim" }
        }
        let stub = try Wire.decode(DeadLetter.self, from: try #require(letters.first { $0.keyString == "demo/victim" }?.value))
        #expect(stub.topic == HeraldTopic.dlq.name && stub.value == nil && stub.reason.contains("not produced"), "\(stub.reason)")
        #expect((try #require(letters.first?.value)).count < 10_000)
        #expect(!orchestrator.logs("output can never be produced; a dead letter stands in for it and the partition goes on").isEmpty)
        // Nothing waits in any partition's outbox: the age of the oldest unproduced output is 0 everywhere (it grew
        // every second on the stalled partition before).
        try await waitUntil("herald_outbox_oldest_seconds on /metrics") {
            let (_, text) = try await httpGet("http://127.0.0.1:\(orchestratorPort)/metrics")
            let ages = text.split(separator: "\n").filter { $0.hasPrefix("herald_outbox_oldest_seconds{") }
            return !ages.isEmpty && ages.allSatisfy { $0.hasSuffix(" 0") || $0.hasSuffix(" 0.0") }
        }

        ingest.signal(SIGTERM)
        orchestrator.signal(SIGTERM)
        #expect(try await ingest.waitForExit() == 0)
        #expect(try await orchestrator.waitForExit() == 0)
        await cluster.shutdown()
    }
}
