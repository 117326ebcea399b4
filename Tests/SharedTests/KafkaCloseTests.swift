import Foundation
import HeraldTestSupport
import Logging
import Shared
import Synchronization
import Testing

/// Stopping a consumer at any point of its group's protocol ends the process normally.
@Suite("Kafka consumer: closing before the first assignment", .timeLimit(.minutes(5)))
struct KafkaCloseTests {
    /// librdkafka before 2.3.0 aborts (`rd_kafka_sticky_assignor_state_destroy: Assertion 'assignor_state' failed`)
    /// when a cooperative-sticky consumer that joined its group but never received an assignment is destroyed
    /// (confluentinc/librdkafka#4312): a notifier stopping while the broker went away died of SIGABRT. Run in a child
    /// process, which the abort would end with a signal.
    @Test("a consumer closed after joining its group, while SyncGroup keeps failing, ends its process normally")
    func closeBeforeAssignment() async {
        await #expect(processExitsWith: .success) {
            try await KafkaCloseTests.joinThenClose()
        }
    }

    /// Joins a group whose SyncGroup answers keep failing (every JoinGroup succeeds, so librdkafka has chosen its
    /// assignor, but no assignment ever comes), then closes the consumer and lets the runtime stop.
    static func joinThenClose() async throws {
        let lines = LogLines()
        var logger = Logger(label: "kafka-close") { _ in lines }
        logger.logLevel = .debug
        try await withCluster(brokers: 1) { cluster in
            let topic = uniqueName("close")
            try cluster.createTopic(TopicSpec(name: topic, partitions: 2))
            cluster.pushRequestErrors(.syncGroup, .rebalanceInProgress, count: 1000)
            var configuration = consumerConfiguration(cluster, group: uniqueName("close"), topics: [topic])
            configuration.client.overrides["debug"] = "cgrp"
            let consumer = try KafkaConsumer(configuration: configuration, logger: logger)
            let iterating = Task { for try await _ in consumer.batches() {} }
            try await waitUntil("a JoinGroup answered without error", timeout: .seconds(60)) {
                lines.contains { $0.contains("JoinGroup response") && $0.contains("(no error)") }
            }
            await consumer.close()
            _ = try? await iterating.value
            #expect(consumer.assignment.isEmpty)
            #expect(!LibRdKafka.destroyBeforeAssignmentAborts || lines.contains { $0.contains("handle is not destroyed") })
        }
    }
}

/// A log handler that keeps the messages, for waiting on what librdkafka reports.
final class LogLines: LogHandler, Sendable {
    private let messages = Mutex<[String]>([])
    var metadata: Logger.Metadata {
        get { [:] }
        set {}
    }
    var logLevel: Logger.Level {
        get { .debug }
        set {}
    }
    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { nil }
        set {}
    }

    func log(event: LogEvent) {
        messages.withLock { $0.append(event.message.description) }
    }

    func contains(where predicate: (String) -> Bool) -> Bool {
        messages.withLock { $0.contains(where: predicate) }
    }
}
