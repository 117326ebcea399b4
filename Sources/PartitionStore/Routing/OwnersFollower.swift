import Foundation
import Logging
import ServiceLifecycle
import Shared

/// Reads `herald.owners` from its beginning (a group of its own), then follows it, into the instance's
/// `PartitionDirectory`.
package final class OwnersFollower: Service, Sendable {
    let consumer: KafkaConsumer
    let directory: PartitionDirectory

    package init(client: KafkaClientSettings, instanceID: String, directory: PartitionDirectory, logger: Logger) throws {
        consumer = try KafkaConsumer.wholeTopic(.owners, client: client, instanceID: instanceID, purpose: "owners", logger: logger)
        self.directory = directory
    }

    package func run() async throws {
        try await consumer.closing {
            try await withGracefulShutdownHandler {
                for try await batch in consumer.batches() { directory.fold(batch.records) }
            } onGracefulShutdown: {
                self.consumer.stop()
            }
        }
    }
}
