import Logging
import PartitionStore
import ServiceSupport
import Shared

/// A stateful service's side of its partitions' owners (docs/partitions.md, "Reads answered by the owner" and
/// "Questions to the owners"), the same in the orchestrator and the notifier: this instance follows every instance's
/// announcements on `herald.owners`, puts questions to the owners of other partitions with the key each announced, and
/// announces the partitions it runs, with its own key and the address its peers reach it at.
package struct PartitionOwnership {
    /// Who runs each partition, as last announced.
    package let owners: PartitionDirectory
    /// Questions to the owners of other partitions.
    package let peers: PartitionPeers
    /// Reads `herald.owners` into `owners` (a service to run).
    package let follower: OwnersFollower
    /// Announces the partitions `owner` runs (a service to run).
    package let announcer: OwnershipAnnouncer

    package init(
        service: String, owner: PartitionOwner, producer: KafkaProducer, common: CommonConfig, settings: StatefulServiceConfig,
        logger: Logger
    ) throws {
        let advertised = settings.advertisedURL
        let owners = PartitionDirectory(
            service: service, addresses: OwnerAddressPolicy(advertised: advertised, httpPort: common.httpPort))
        self.owners = owners
        follower = try OwnersFollower(client: common.kafka, instanceID: common.instanceID, directory: owners, logger: logger)
        peers = PartitionPeers(instance: common.instanceID, owner: { owners.owner(of: $0) }, runs: { owner.isRunning($0) })
        announcer = OwnershipAnnouncer(
            owner: owner, producer: producer, instance: common.instanceID, peerKey: peers.key, logger: logger
        ) { await ListeningPort.advertisedURL(common, advertised: advertised) }
    }
}
