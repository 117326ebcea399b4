import Foundation

/// Which instance of a service owns a partition, and where its HTTP port is (`herald.owners`, compacted, key
/// `<service>/<partition>`): written by the instance when the partition starts running there, read by every instance
/// of the service, so that a read of a partition's state reaching any instance is answered by the owner (Kafka
/// Streams' interactive queries; docs/partitions.md, "Reads answered by the owner"). The services still talk only
/// through Kafka: this is one service's instances finding each other.
package struct OwnerAnnouncement: WireMessage {
    package static let kind = "owner"
    package static let version = 1

    package var service: String
    package var partition: Int32
    package var instance: String
    /// Where the instance answers, such as `http://10.0.0.7:8081`.
    package var url: String
    package var at: Date
    /// What another instance of the service presents when it asks this one about its partitions (`PartitionPeers`): a
    /// random key the instance draws at start, so that only a reader of `herald.owners` (the instances, inside the
    /// trust boundary of the topics themselves) can put a question to it. Absent: the instance answers no questions.
    package var peerKey: String?

    package init(service: String, partition: Int32, instance: String, url: String, at: Date, peerKey: String? = nil) {
        self.service = service
        self.partition = partition
        self.instance = instance
        self.url = url
        self.at = at
        self.peerKey = peerKey
    }

    package var key: String { "\(service)/\(partition)" }
}
