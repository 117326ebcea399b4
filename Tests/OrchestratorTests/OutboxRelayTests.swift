import Foundation
import HeraldTestSupport
import Logging
import Shared
import Testing

@testable import Orchestrator
@testable import PartitionStore
@testable import OrchestratorDomain

@Suite("Outbox relay", .timeLimit(.minutes(5)))
struct OutboxRelayTests {
    @Test("output committed before a restart is produced by the relay, without a new batch")
    func leftoverOutbox() async throws {
        let logger = Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })
        let cluster = try EmbeddedKafkaCluster(brokers: 1, logger: logger)
        try cluster.createTopics(HeraldTopic.specs(partitions: 1))
        let directory = temporaryDirectory()
        do {
            // The previous run committed an email change (and its contact snapshot) and died before producing it.
            let database = try OrchestratorPartition.open(directory: directory, partition: 0)
            var writer = Writer()
            _ = try await database.applyBatch(
                [try writer.update(id: "1", #"{"$email_address":"paul@example.com"}"#)], apply: OrchestratorApplier.apply)
            try database.close()
        }
        let producer = try KafkaProducer(
            configuration: KafkaProducerConfiguration(
                client: KafkaClientSettings(bootstrapServers: cluster.bootstrapServers), clientID: "relay-test"),
            logger: logger)
        let manager = OrchestratorPartitions(directory: directory, producer: producer, logger: logger)
        let starts = try await manager.partitionsAssigned([TopicPartition(HeraldTopic.ingest.name, 0)])
        #expect(starts == [TopicPartition(HeraldTopic.ingest.name, 0): .offset(1)])

        await manager.flushUnflushed()

        let records = try await readTopic(HeraldTopic.contacts.name, bootstrap: cluster.bootstrapServers, logger: logger) {
            !$0.isEmpty
        }
        #expect(records.map(\.keyString) == ["demo/paul"])
        // Deleted by the partition's next write, or when it closes (`ProducedMarks`): not there when it opens again.
        await manager.partitionsRevoked([TopicPartition(HeraldTopic.ingest.name, 0)], lost: false)
        let reopened = try OrchestratorPartition.open(directory: directory, partition: 0)
        #expect(try await reopened.pendingOutbox().isEmpty)
        await producer.shutdown()
        await cluster.shutdown()
    }
}
