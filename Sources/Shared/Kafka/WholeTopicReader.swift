import Foundation
import Logging

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
