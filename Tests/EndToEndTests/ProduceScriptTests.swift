import Foundation
import HeraldTestSupport
import Shared
import Testing

@Suite("scripts/produce", .timeLimit(.minutes(2)))
struct ProduceScriptTests {
    @Test("generated users over HTTP and straight into herald.ingest land on the topic; a rejected write exits 1 naming it")
    func produce() async throws {
        let (cluster, ingest, port) = try await startIngest()
        let script = repositoryFile("scripts/produce")
        let (http, httpOutput) = try runCommand(script, ["--generate", "5", "--rate", "0", "--http", "http://127.0.0.1:\(port)"])
        #expect(http == 0, "\(httpOutput)")
        #expect(httpOutput.contains("10 sent") && httpOutput.contains("0 errors"), "\(httpOutput)")
        let (kafka, kafkaOutput) = try runCommand(script, ["--generate", "7", "--rate", "0", "--kafka", cluster.bootstrapServers])
        #expect(kafka == 0, "\(kafkaOutput)")
        // 5 profile updates, 5 event batches (2 or 3 events each, one record per event), 7 records from kcat.
        let records = try await readTopic(HeraldTopic.ingest.name, bootstrap: cluster.bootstrapServers, logger: quietLogger) {
            $0.filter { $0.keyString?.hasPrefix("demo/gen-") == true }.count >= 5 + 10 + 7
        }
        let fromKafka = records.filter { $0.value.map { String(decoding: $0, as: UTF8.self).contains(#""id":"gen-1-"#) } ?? false }
        #expect(fromKafka.count == 7)

        let bad = FileManager.default.temporaryDirectory.appendingPathComponent("produce-\(UUID().uuidString).jsonl").path
        try #"{"path":"/v1/app/events","body":{"installation_id":"x","events":[{"name":"bad name!"}]}}"#.write(
            toFile: bad, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: bad) }
        let (rejected, message) = try runCommand(script, ["--file", bad, "--http", "http://127.0.0.1:\(port)"])
        #expect(rejected == 1)
        #expect(message.contains("422") && message.contains("events[0].name"), "\(message)")
        ingest.signal(SIGTERM)
        _ = try await ingest.waitForExit()
        await cluster.shutdown()
    }
}
