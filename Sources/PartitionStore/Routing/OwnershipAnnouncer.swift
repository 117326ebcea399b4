import Foundation
import Logging
import ServiceLifecycle
import Shared

/// Announces on `herald.owners` each partition that starts running on this instance, with the instance's address,
/// checked every `interval`; every announcement again each `refresh`, so that an announcement of a former owner that
/// landed after this one's (its produce delayed through the rebalance) is overtaken within that time.
package final class OwnershipAnnouncer: Service, Sendable {
    let owner: PartitionOwner
    let producer: KafkaProducer
    let instance: String
    /// The instance's address, once its HTTP port listens.
    let address: @Sendable () async -> String
    /// What peers present to ask this instance about its partitions (`PartitionPeers.key`); nil: no questions.
    let peerKey: String?
    let logger: Logger
    let interval: Duration
    let refresh: Duration

    package init(
        owner: PartitionOwner, producer: KafkaProducer, instance: String, peerKey: String? = nil, logger: Logger,
        interval: Duration = .milliseconds(250), refresh: Duration = .seconds(30), address: @escaping @Sendable () async -> String
    ) {
        self.owner = owner
        self.producer = producer
        self.instance = instance
        self.peerKey = peerKey
        self.address = address
        self.logger = logger
        self.interval = interval
        self.refresh = refresh
    }

    package func run() async throws {
        let url = await address()
        var announced: Set<Int32> = []
        var lastRefresh = ContinuousClock.now
        while !Task.isShuttingDownGracefully {
            let running = Set(await owner.runningPartitions)
            if ContinuousClock.now - lastRefresh >= refresh {
                announced = []
                lastRefresh = .now
            }
            let new = running.subtracting(announced).sorted()
            if !new.isEmpty {
                let now = Date()
                let records = try new.map { partition in
                    let announcement = OwnerAnnouncement(service: owner.service, partition: partition, instance: instance, url: url, at: now, peerKey: peerKey)
                    return KafkaOutgoingRecord(topic: HeraldTopic.owners.name, key: announcement.key, value: try Wire.encode(announcement))
                }
                do {
                    _ = try await producer.send(records)
                    announced.formUnion(new)
                } catch {
                    logger.warning("partition ownership not announced; trying again", metadata: ["error": "\(error)"])
                }
            }
            // Partitions that left are announced again when they come back.
            announced.formIntersection(running)
            try? await Task.sleep(for: interval)
        }
    }
}
