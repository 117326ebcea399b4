import Foundation
import Logging
import ServiceLifecycle
import Synchronization

/// A service that follows a one-partition topic from where it ended when the service started (a group of its own, as
/// `WholeTopicFollower`), each record through `apply`: questions and answers that matter only while someone waits for
/// them (an export's, docs/data-rights.md). `isFollowing` once the partition is assigned at that offset: every record
/// produced after it is applied, and nothing written before the start is.
package final class TopicTailFollower: Service, Sendable {
    let consumer: KafkaConsumer
    let topic: HeraldTopic
    let logger: Logger
    let apply: @Sendable (KafkaRecord) async -> Void
    private let start: TailStart

    package init(
        _ topic: HeraldTopic, client: KafkaClientSettings, instanceID: String, logger: Logger,
        apply: @escaping @Sendable (KafkaRecord) async -> Void
    ) throws {
        let start = TailStart()
        var configuration = KafkaConsumerConfiguration(
            client: client, clientID: "\(instanceID)-\(topic.name)", groupID: "herald-\(topic.name)-\(instanceID)-\(UUID().uuidString)",
            topics: [topic.name])
        // Someone waits for each record: the embedded broker holds a fetch its whole wait (docs/kafka.md).
        configuration.fetchMaxWait = .milliseconds(20)
        consumer = try KafkaConsumer(configuration: configuration, listener: start, logger: logger)
        self.topic = topic
        self.logger = logger
        self.apply = apply
        self.start = start
    }

    /// Whether every record produced from now on will be applied.
    package var isFollowing: Bool { start.assigned.withLock { $0 } }

    package func run() async throws {
        try await consumer.closing {
            try await withGracefulShutdownHandler {
                // Where the topic ends now (asked until the broker answers): the assignment starts there.
                let end = await consumer.watermarksWhenKnown(TopicPartition(topic.name, 0), logger: logger)?.high
                start.end.withLock { $0 = end }
                for try await batch in consumer.batches() {
                    for record in batch.records { await apply(record) }
                }
            } onGracefulShutdown: {
                self.consumer.stop()
            }
        }
    }
}

/// Starts the partition at the end `TopicTailFollower` read before it iterated (the assignment comes inside the
/// iteration, after it).
final class TailStart: KafkaRebalanceListener {
    let end = Mutex<Int64?>(nil)
    let assigned = Mutex(false)

    func partitionsAssigned(_ partitions: [TopicPartition]) async throws -> [TopicPartition: KafkaStartOffset] {
        let end = end.withLock { $0 }
        assigned.withLock { $0 = end != nil }
        return Dictionary(uniqueKeysWithValues: partitions.map { ($0, end.map(KafkaStartOffset.offset) ?? .end) })
    }

    func partitionsRevoked(_ partitions: [TopicPartition], lost: Bool) async {
        assigned.withLock { $0 = false }
    }
}
