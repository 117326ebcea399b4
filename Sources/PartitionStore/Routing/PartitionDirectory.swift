import Foundation
import Shared
import Synchronization

/// Who owns each partition of a service, as `herald.owners` says (the latest announcement per partition): where a read
/// that needs a partition's state is forwarded. An announcement lags a rebalance by the time the new owner takes to
/// open the partition; the owner it names re-checks, and a read that finds no owner is asked again.
package final class PartitionDirectory: Sendable {
    package let service: String
    /// What an announced address may be (`OwnerAddressPolicy`).
    package let addresses: OwnerAddressPolicy
    private let owners = Mutex<[Int32: OwnerAnnouncement]>([:])

    package init(service: String, addresses: OwnerAddressPolicy = .any) {
        self.service = service
        self.addresses = addresses
    }

    package func owner(of partition: Int32) -> OwnerAnnouncement? { owners.withLock { $0[partition] } }

    /// Applies records of `herald.owners` in their order (one partition: the log orders the announcements, not the
    /// instances' clocks): this service's; a record that does not read is skipped (another service's, a later version's).
    /// An announcement whose address is not of this instance's form is refused (returned): its partition keeps the
    /// owner it had, and a read of it is asked again until a valid announcement comes.
    @discardableResult
    package func fold(_ records: [KafkaRecord]) -> [OwnerAnnouncement] {
        let read = records.compactMap { record in record.value.flatMap { try? Wire.decode(OwnerAnnouncement.self, from: $0) } }
        var refused: [OwnerAnnouncement] = []
        owners.withLock { owners in
            for announcement in read where announcement.service == service {
                guard addresses.accepts(announcement.url) else {
                    refused.append(announcement)
                    continue
                }
                owners[announcement.partition] = announcement
            }
        }
        return refused
    }
}
