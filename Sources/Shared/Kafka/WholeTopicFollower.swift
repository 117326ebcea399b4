import Foundation
import Logging
import ServiceLifecycle

/// A service that reads a compacted topic whole from its beginning (`KafkaConsumer.wholeTopic`), then follows it, each
/// record through `apply`: the state every instance folds entirely (webhook endpoints' states, the suppression list).
package final class WholeTopicFollower: Service, Sendable {
    let consumer: KafkaConsumer
    let topic: HeraldTopic
    let logger: Logger
    let apply: @Sendable (KafkaRecord) async -> Void
    /// Called once, when every record the topic held at the start has been applied.
    let caughtUp: @Sendable () -> Void

    package init(
        _ topic: HeraldTopic, client: KafkaClientSettings, instanceID: String, logger: Logger,
        caughtUp: @escaping @Sendable () -> Void = {}, apply: @escaping @Sendable (KafkaRecord) async -> Void
    ) throws {
        consumer = try KafkaConsumer.wholeTopic(topic, client: client, instanceID: instanceID, purpose: topic.name, logger: logger)
        self.topic = topic
        self.logger = logger
        self.caughtUp = caughtUp
        self.apply = apply
    }

    package func run() async throws {
        try await consumer.closing {
            try await withGracefulShutdownHandler {
                // Where the topic ended at the start (asked until the broker answers): reading up to it is catching up.
                let end = await consumer.watermarksWhenKnown(TopicPartition(topic.name, 0), logger: logger).map { $0.high > $0.low ? $0.high : -1 }
                // Nothing held: caught up at once.
                var waiting = true
                if end == -1 {
                    waiting = false
                    caughtUp()
                }
                for try await batch in consumer.batches() {
                    for record in batch.records {
                        await apply(record)
                        if waiting, let end, record.offset + 1 >= end {
                            waiting = false
                            caughtUp()
                        }
                    }
                }
            } onGracefulShutdown: {
                self.consumer.stop()
            }
        }
    }
}
