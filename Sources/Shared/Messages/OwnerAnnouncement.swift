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

    package init(service: String, partition: Int32, instance: String, url: String, at: Date) {
        self.service = service
        self.partition = partition
        self.instance = instance
        self.url = url
        self.at = at
    }

    package var key: String { "\(service)/\(partition)" }
}
