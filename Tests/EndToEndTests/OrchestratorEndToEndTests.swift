import Foundation
import HeraldTestSupport
import Shared
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

@Suite("Orchestrator end to end", .timeLimit(.minutes(5)))
struct OrchestratorEndToEndTests {
    static func start(
        _ cluster: EmbeddedKafkaCluster, data: String, environment extra: [String: String] = [:]
    ) async throws -> (ChildProcess, Int) {
        let process = try ChildProcess(
            "herald-orchestrator",
            environment: [
                "KAFKA_BOOTSTRAP_SERVERS": cluster.bootstrapServers, "HERALD_HTTP_HOST": "127.0.0.1",
                "HERALD_HTTP_PORT": "0", "HERALD_TOPIC_PARTITIONS": "4", "HERALD_DATA_DIR": data,
                "HERALD_SESSION_TIMEOUT_MS": "3000",
            ].merging(extra) { $1 })
        try await waitUntil("the orchestrator to listen") {
            !process.logs("http listening").isEmpty || process.exitCode != nil
        }
        let port = try #require(process.logs("http listening").first?["port"] as? Int, "\(process.output.suffix(5))")
        return (process, port)
    }

    /// Two orchestrators, `<prefix>-a` and `<prefix>-b` (instance ids `orchestrator-a`, `orchestrator-b`), with the
    /// sample's apps, each with a scratch data directory (returned, for the caller to remove).
    static func startTwo(_ cluster: EmbeddedKafkaCluster, prefix: String) async throws -> (orchestrators: [(ChildProcess, Int)], directories: [String]) {
        var orchestrators: [(ChildProcess, Int)] = []
        var directories: [String] = []
        for name in ["a", "b"] {
            let data = try scratchDirectory("\(prefix)-\(name)")
            directories.append(data)
            orchestrators.append(
                try await start(cluster, data: data, environment: sampleApps.merging(["HERALD_INSTANCE_ID": "orchestrator-\(name)"]) { $1 }))
        }
        return (orchestrators, directories)
    }

    /// A one-broker cluster with Herald's topics (4 partitions) and a producer to it.
    static func clusterAndProducer() throws -> (EmbeddedKafkaCluster, KafkaProducer) {
        let cluster = try EmbeddedKafkaCluster(brokers: 1, logger: quietLogger)
        try cluster.createTopics(HeraldTopic.specs(partitions: 4))
        let producer = try KafkaProducer(
            configuration: KafkaProducerConfiguration(
                client: KafkaClientSettings(bootstrapServers: cluster.bootstrapServers), clientID: "e2e"),
            logger: quietLogger)
        return (cluster, producer)
    }

    /// The count of an event in the orchestrator's view of demo/paul (nil: no profile yet).
    static func count(_ port: Int, _ event: String) async throws -> Int? {
        let (status, body) = try await httpGet("http://127.0.0.1:\(port)/v1/profiles/demo/paul")
        guard status == 200 else { return nil }
        guard case .number(let text)? = try JSONParser.parse(Array(body.utf8))["events"]?["e.\(event)"]?["count"] else {
            return nil
        }
        return Int(text)
    }

    @Test("killed with SIGKILL mid-stream and restarted, it applies every write exactly once and produces its outbox")
    func crashAndRestart() async throws {
        let (cluster, producer) = try Self.clusterAndProducer()
        func record(_ op: IngestOp, _ id: String, _ fields: [JSONMember]) -> KafkaOutgoingRecord {
            let ingest = IngestRecord(
                op: op, id: id, project: "demo", source: .server, customID: "paul", installationID: nil,
                receivedAt: Date(), fields: fields)
            return KafkaOutgoingRecord(topic: HeraldTopic.ingest.name, key: ingest.key, value: ingest.value)
        }
        let tap = JSONMember("event", .object([JSONMember("name", .string("TAP")), JSONMember("attributes", .object([]))]))
        var records = (0..<3000).map { record(.event, "tap-\($0)", [tap]) }
        records.insert(
            record(.profileUpdate, "email", [JSONMember("profile", .object([JSONMember("email", .string("paul@example.com"))]))]),
            at: 1500)
        records.append(
            record(.event, "done", [JSONMember("event", .object([JSONMember("name", .string("DONE")), JSONMember("attributes", .object([]))]))]))
        for chunk in stride(from: 0, to: records.count, by: 500) {
            _ = try await producer.send(Array(records[chunk..<min(chunk + 500, records.count)]))
        }

        let data = FileManager.default.temporaryDirectory.appendingPathComponent("herald-orch-e2e-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: data) }
        let (first, firstPort) = try await Self.start(cluster, data: data)
        try await waitUntil("some writes applied") { (try? await Self.count(firstPort, "TAP")) ?? nil != nil }
        first.signal(SIGKILL)
        _ = try await first.waitForExit()

        let (second, port) = try await Self.start(cluster, data: data)
        try await waitUntil("the last write applied", timeout: .seconds(60)) {
            (try? await Self.count(port, "DONE")) ?? nil == 1
        }
        #expect(try await Self.count(port, "TAP") == 3000)

        // The contact snapshot of the email change reached herald.contacts (from the outbox, before or after the crash).
        let contacts = try await readTopic(HeraldTopic.contacts.name, bootstrap: cluster.bootstrapServers, logger: quietLogger) {
            !$0.isEmpty
        }
        #expect(contacts.last?.keyString == "demo/paul")
        let snapshot = try JSONParser.parse(try #require(contacts.last?.value))
        #expect(snapshot["email"]?["address"] == .string("paul@example.com"))

        second.signal(SIGTERM)
        #expect(try await second.waitForExit() == 0)
        await producer.shutdown()
        await cluster.shutdown()
    }

    @Test("identity across partitions through the broker; herald profile show prints what the endpoint serves")
    func identityAndProfileShow() async throws {
        let (cluster, producer) = try Self.clusterAndProducer()
        var clock = Date()
        func app(_ op: IngestOp, _ id: String, customID: String? = nil, _ fields: [JSONMember] = []) -> KafkaOutgoingRecord {
            clock += 1
            let ingest = IngestRecord(
                op: op, id: id, project: "demo", source: .app(id: "ios", dev: false), customID: customID,
                installationID: "I-1", receivedAt: clock, fields: fields)
            return KafkaOutgoingRecord(topic: HeraldTopic.ingest.name, key: ingest.key, value: ingest.value)
        }
        let opened = JSONMember("event", .object([JSONMember("name", .string("OPENED")), JSONMember("attributes", .object([]))]))
        let token = String(repeating: "ab", count: 32)
        _ = try await producer.send([
            app(.event, "e1", [opened]),
            app(.pushToken, "t1", [JSONMember("push", .object([JSONMember("token", .string(token)), JSONMember("environment", .string("sandbox"))]))]),
            app(.identify, "id1", customID: "paul"),
            app(.event, "e2", [opened]),
        ])

        let data = FileManager.default.temporaryDirectory.appendingPathComponent("herald-orch-e2e-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: data) }
        let (process, port) = try await Self.start(cluster, data: data)
        let latest = Locked("")
        try await waitUntil("the installation and both events at demo/paul", timeout: .seconds(60)) {
            guard let (status, text) = try? await httpGet("http://127.0.0.1:\(port)/v1/profiles/demo/paul"), status == 200,
                let profile = try? JSONParser.parse(Array(text.utf8)),
                profile["events"]?["e.OPENED"]?["count"] == .number("2"),
                profile["installations"]?[0]?["push"]?["token"] == .string(token)
            else { return false }
            latest.withLock { $0 = text }
            return true
        }
        let body = latest.withLock { $0 }
        #expect(try await httpGet("http://127.0.0.1:\(port)/v1/installations/demo/I-1").0 == 404)

        let herald = binDirectory.appendingPathComponent("herald").path
        let (status, output) = try await runCommand(herald, ["profile", "show", "demo", "paul", "--data-dir", data])
        #expect(status == 0)
        #expect(output.trimmingCharacters(in: .newlines) == body)
        let (missing, message) = try await runCommand(herald, ["profile", "show", "demo", "nobody", "--data-dir", data])
        #expect(missing == 1)
        #expect(message.contains("no profile demo/nobody"))
        let (usage, _) = try await runCommand(herald, ["profile", "show", "demo", "--data-dir", data])
        #expect(usage != 0)

        process.signal(SIGTERM)
        #expect(try await process.waitForExit() == 0)
        await producer.shutdown()
        await cluster.shutdown()
    }
}
