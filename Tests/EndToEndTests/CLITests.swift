import Foundation
import HeraldTestSupport
import Shared
import Testing

@Suite("herald CLI against a broker", .timeLimit(.minutes(5)))
struct CLITests {
    static var herald: String { binDirectory.appendingPathComponent("herald").path }

    @Test("topics, tail (decoded, by key), lag of a group that committed, send-test; an unknown topic is one line and exit 1")
    func operatorCommands() async throws {
        let (cluster, producer) = try OrchestratorEndToEndTests.clusterAndProducer()
        let bootstrap = ["--bootstrap", cluster.bootstrapServers]
        let reports = ["demo/paul", "demo/anna", "demo/paul"].enumerated().map { index, key in
            KafkaOutgoingRecord(
                topic: HeraldTopic.deliveries.name, key: Array(key.utf8),
                value: Array(#"{"kind":"delivery","n":\#(index)}"#.utf8),
                headers: index == 2 ? [KafkaHeader("herald-request-id", "r-1"), KafkaHeader("raw", [0xff, 0x00] as [UInt8]?)] : [])
        }
        _ = try await producer.send(reports)

        let (status, topics) = try await runCommand(Self.herald, ["topics"] + bootstrap)
        #expect(status == 0, "\(topics)")
        for topic in HeraldTopic.allCases { #expect(topics.contains(topic.name), "\(topic.name) in \(topics)") }
        let deliveries = try #require(topics.split(separator: "\n").first { $0.hasPrefix("herald.deliveries ") })
        #expect(deliveries.split(separator: " ", omittingEmptySubsequences: true).prefix(3) == ["herald.deliveries", "4", "3"])

        let (tailed, lines) = try await runCommand(Self.herald, ["tail", "herald.deliveries", "--key", "demo/paul"] + bootstrap)
        #expect(tailed == 0, "\(lines)")
        let records = lines.split(separator: "\n").map { try? JSONParser.parse(Array($0.utf8)) }
        #expect(records.count == 2)
        #expect(records.allSatisfy { $0?["key"]?.stringValue == "demo/paul" && $0?["value"]?["kind"]?.stringValue == "delivery" })
        #expect(records.compactMap { $0?["value"]?["n"] } == [.number("0"), .number("2")])
        // Header values: text as text, other bytes as base64.
        #expect(records.last??["headers"]?["herald-request-id"]?.stringValue == "r-1", "\(lines)")
        #expect(records.last??["headers"]?["raw"]?["base64"]?.stringValue == "/wA=", "\(lines)")

        let (unknown, message) = try await runCommand(Self.herald, ["tail", "herald.nope"] + bootstrap)
        #expect(unknown == 1)
        #expect(message.split(separator: "\n").count == 1 && message.hasPrefix("herald: no topic herald.nope"), "\(message)")
        // Usage errors too: one line naming the problem and where the help is, exit 64.
        let (usageStatus, usageLine) = try await runCommand(Self.herald, ["tail", "--limit", "x"] + bootstrap)
        #expect(usageStatus == 64, "\(usageLine)")
        #expect(usageLine.split(separator: "\n").count == 1 && usageLine.hasPrefix("herald: ") && usageLine.contains("(herald tail --help)"), "\(usageLine)")

        // A group that read the deliveries and copied its offsets to its progress group, as the services do after each
        // batch.
        var configuration = KafkaConsumerConfiguration(
            client: KafkaClientSettings(bootstrapServers: cluster.bootstrapServers), clientID: "lag-test", groupID: "lag-test",
            topics: [HeraldTopic.deliveries.name])
        configuration.sessionTimeout = .seconds(3)
        configuration.progressGroup = "lag-test.offsets"
        let consumer = try KafkaConsumer(configuration: configuration, logger: quietLogger)
        for try await batch in consumer.batches() {
            consumer.commitProcessed(KafkaBatch(records: Array(batch.records.prefix(1))).nextOffsets)
            break
        }
        try await waitUntil("the commit") {
            let (_, lag) = try await runCommand(Self.herald, ["lag", "--group", "lag-test.offsets"] + bootstrap)
            return lag.contains("lag-test.offsets: total lag 2")
        }
        consumer.stop()
        await consumer.close()

        let (sent, line) = try await runCommand(Self.herald, ["send-test", "demo", "--installation", "I-1", "--custom-id", "paul"] + bootstrap)
        #expect(sent == 0, "\(line)")
        let sends = try await readTopic(HeraldTopic.sendsPush.name, bootstrap: cluster.bootstrapServers, logger: quietLogger) { !$0.isEmpty }
        let send = try Wire.decode(SendRequest.self, from: try #require(sends.first?.value))
        #expect(send.test == true && send.installationID == "I-1" && send.profileKey == "demo/paul" && !send.marketing)
        #expect(line.contains(send.sendID))

        let (help, usage) = try await runCommand(Self.herald, ["--help"])
        #expect(help == 0)
        for command in ["config", "status", "topics", "tail", "lag", "profile", "send-test", "campaign"] { #expect(usage.contains(command), "\(command)") }
        await producer.shutdown()
        await cluster.shutdown()
    }

    @Test(
        "the command takes the environment's KAFKA_* settings as the services do (SASL over TLS included), and refuses the reserved ones",
        arguments: [["topics"], ["config", "apply", "config/example"]])
    func kafkaSettings(arguments: [String]) async throws {
        let cluster = try EmbeddedKafkaCluster(brokers: 1, logger: quietLogger)
        try cluster.createTopics(HeraldTopic.specs(partitions: 2))
        var environment = ProcessInfo.processInfo.environment
        environment["KAFKA_BOOTSTRAP_SERVERS"] = cluster.bootstrapServers
        func run(_ extra: [String: String]) async throws -> (Int32, String) {
            let arguments = arguments.map { $0 == "config/example" ? repositoryFile($0) : $0 }
            return try await runCommand(Self.herald, arguments, environment: environment.merging(extra) { $1 })
        }
        // librdkafka is handed the setting: it names the value it refuses.
        let (refused, refusal) = try await run(["KAFKA_SECURITY_PROTOCOL": "sasl_nothing"])
        #expect(refused != 0 && refusal.contains("security.protocol"), "\(refusal)")
        let (reserved, reservedMessage) = try await run(["KAFKA_ACKS": "0"])
        #expect(reserved != 0 && reservedMessage.contains("KAFKA_ACKS"), "\(reservedMessage)")
        let (plain, output) = try await run(["KAFKA_CLIENT_RACK": "rack-1"])
        #expect(plain == 0, "\(output)")
        await cluster.shutdown()
    }
}
