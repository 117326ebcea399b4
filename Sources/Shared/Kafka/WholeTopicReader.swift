import Foundation
import Logging
import ServiceLifecycle

extension KafkaConsumer {
    /// A consumer that reads `topic` whole, from its beginning, in a group of its own (new at every start, so that it
    /// never shares the partitions nor commits a position): for a compacted topic every instance folds entirely, such
    /// as the configuration or the partitions' owners.
    package static func wholeTopic(
        _ topic: HeraldTopic, client: KafkaClientSettings, instanceID: String, purpose: String, logger: Logger
    ) throws -> KafkaConsumer {
        try KafkaConsumer(
            configuration: KafkaConsumerConfiguration(
                client: client, clientID: "\(instanceID)-\(purpose)",
                groupID: "herald-\(purpose)-\(instanceID)-\(UUID().uuidString)", topics: [topic.name]),
            listener: FromBeginningListener(), logger: logger)
    }

    /// `partition`'s watermarks, asked every second until the broker answers; nil when the task is cancelled or the
    /// service shuts down first. What a follower of a whole topic, or of its tail, starts from.
    package func watermarksWhenKnown(_ partition: TopicPartition, logger: Logger) async -> (low: Int64, high: Int64)? {
        while !Task.isShuttingDownGracefully && !Task.isCancelled {
            do {
                return try await watermarks(partition)
            } catch {
                logger.warning("the end of a followed topic not known yet; asked again", metadata: ["topic": "\(partition.topic)", "error": "\(error)"])
                try? await Task.sleep(for: .seconds(1))
            }
        }
        return nil
    }

    /// Runs `body`, then closes the consumer, whether `body` returned or threw.
    package func closing(after body: () async throws -> Void) async throws {
        do {
            try await body()
        } catch {
            await close()
            throw error
        }
        await close()
    }
}
