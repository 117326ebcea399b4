import Foundation
import Logging
import ServiceLifecycle
import Shared

/// Reads `herald.owners` from its beginning (a group of its own), then follows it, into the instance's
/// `PartitionDirectory`.
package final class OwnersFollower: Service, Sendable {
    let consumer: KafkaConsumer
    let directory: PartitionDirectory
    let logger: Logger

    package init(client: KafkaClientSettings, instanceID: String, directory: PartitionDirectory, logger: Logger) throws {
        consumer = try KafkaConsumer.wholeTopic(.owners, client: client, instanceID: instanceID, purpose: "owners", logger: logger)
        self.directory = directory
        self.logger = logger
    }

    package func run() async throws {
        try await consumer.closing {
            try await withGracefulShutdownHandler {
                for try await batch in consumer.batches() {
                    for refused in directory.fold(batch.records) {
                        logger.warning(
                            "owner announcement refused: its address is not of this instance's form (scheme, port, a host and nothing else)",
                            metadata: ["instance": "\(refused.instance)", "partition": "\(refused.partition)", "url": "\(refused.url)"])
                    }
                }
            } onGracefulShutdown: {
                self.consumer.stop()
            }
        }
    }
}
