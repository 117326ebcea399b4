import Foundation
import HeraldTestSupport
import Shared
import Testing

/// `herald suppression list|add|remove` and `herald webhook list|replay` against a cluster (issue 61): what they write
/// to the compacted topics the notifiers follow, and the input they refuse.
@Suite("The herald command: suppression list and webhook endpoints", .timeLimit(.minutes(5)))
struct OperatorListsCLITests {
    static let herald = binDirectory.appendingPathComponent("herald").path

    @Test("suppression add, list and remove: a digest and a masked hint, never the address; bad input named")
    func suppressions() async throws {
        let cluster = try EmbeddedKafkaCluster(brokers: 1, logger: quietLogger)
        try cluster.createTopics(HeraldTopic.specs(partitions: 2))
        let bootstrap = ["--bootstrap", cluster.bootstrapServers]
        func herald(_ arguments: [String]) async throws -> (Int32, String) { try await runCommand(Self.herald, arguments + bootstrap) }

        let (added, addOutput) = try await herald(["suppression", "add", "demo/email", "Paul@Example.com", "--reason", "complaint"])
        #expect(added == 0 && addOutput.contains("suppressed p***@example.com on demo/email"), "\(addOutput)")
        let (phone, phoneOutput) = try await herald(["suppression", "add", "demo/sms", "+33612345678"])
        #expect(phone == 0, "\(phoneOutput)")
        let (_, listed) = try await herald(["suppression", "list", "--project", "demo"])
        let entries = try listed.split(separator: "\n").map { try Wire.decode(SuppressionEntry.self, from: Array($0.utf8)) }
        #expect(entries.map(\.hint).sorted() == ["+336******78", "p***@example.com"], "\(listed)")
        #expect(entries.first { $0.channel == .email }?.reason == "complaint" && !listed.contains("paul@"))
        #expect(entries.first { $0.channel == .email }?.digest == SuppressionEntry.digest(channel: .email, address: "paul@example.com"))

        let (removed, removeOutput) = try await herald(["suppression", "remove", "demo/email", "paul@example.com"])
        #expect(removed == 0 && removeOutput.contains("removed p***@example.com from demo/email"), "\(removeOutput)")
        let (_, after) = try await herald(["suppression", "list"])
        #expect(after.split(separator: "\n").count == 1 && after.contains("+336******78"), "\(after)")

        for (arguments, message) in [
            (["suppression", "add", "demo/push", "x"], "expected PROJECT/email or PROJECT/sms"),
            (["suppression", "add", "demo/email", "not-an-address"], "not-an-address"),
            (["suppression", "add", "demo/sms", "0612345678"], "0612345678"),
        ] {
            let (status, output) = try await herald(arguments)
            #expect(status != 0 && output.contains(message), "\(arguments): \(output)")
        }
        await cluster.shutdown()
    }

    @Test("webhook replay writes the endpoint's enabled state; list shows each endpoint's last state")
    func webhookReplay() async throws {
        let cluster = try EmbeddedKafkaCluster(brokers: 1, logger: quietLogger)
        try cluster.createTopics(HeraldTopic.specs(partitions: 2))
        let bootstrap = ["--bootstrap", cluster.bootstrapServers]
        // A notifier's 410 first.
        let producer = try KafkaProducer(
            configuration: KafkaProducerConfiguration(client: KafkaClientSettings(bootstrapServers: cluster.bootstrapServers), clientID: "t"),
            logger: quietLogger)
        let disabled = WebhookEndpointState(project: "demo", endpoint: "crm", disabled: true, reason: "gone", sendID: "s1", by: "notifier", at: Date())
        _ = try await producer.send([KafkaOutgoingRecord(topic: HeraldTopic.webhooks.name, key: disabled.key, value: try Wire.encode(disabled))])
        await producer.shutdown()
        let (_, before) = try await runCommand(Self.herald, ["webhook", "list"] + bootstrap)
        #expect(try Wire.decode(WebhookEndpointState.self, from: Array((before.split(separator: "\n").first ?? "").utf8)).disabled)

        let (replayed, output) = try await runCommand(Self.herald, ["webhook", "replay", "demo/crm"] + bootstrap)
        #expect(replayed == 0 && output.contains("enabled demo/crm (disabled since"), "\(output)")
        let (_, after) = try await runCommand(Self.herald, ["webhook", "list"] + bootstrap)
        let state = try Wire.decode(WebhookEndpointState.self, from: Array((after.split(separator: "\n").first ?? "").utf8))
        #expect(!state.disabled && state.reason == "replay" && state.by == "herald")
        let (bad, badOutput) = try await runCommand(Self.herald, ["webhook", "replay", "crm"] + bootstrap)
        #expect(bad != 0 && badOutput.contains("expected PROJECT/ENDPOINT"), "\(badOutput)")
        await cluster.shutdown()
    }
}
