import Foundation
import Shared
import Testing

@testable import PartitionStore

@Suite("Partition directory: who owns each partition")
struct PartitionDirectoryTests {
    func record(_ announcement: OwnerAnnouncement, offset: Int64) throws -> KafkaRecord {
        KafkaRecord(
            topic: HeraldTopic.owners.name, partition: 0, offset: offset, key: Array(announcement.key.utf8),
            value: try Wire.encode(announcement))
    }

    @Test("the latest announcement per partition in the log's order, whatever the instances' clocks; other services' and unreadable records skipped")
    func fold() throws {
        let directory = PartitionDirectory(service: "orchestrator")
        let now = Date()
        let a = OwnerAnnouncement(service: "orchestrator", partition: 3, instance: "a", url: "http://a:8081", at: now)
        // B took the partition later, with a clock behind A's: the log says B.
        let b = OwnerAnnouncement(service: "orchestrator", partition: 3, instance: "b", url: "http://b:8081", at: now - 60)
        let notifier = OwnerAnnouncement(service: "notifier", partition: 3, instance: "n", url: "http://n:8082", at: now)
        directory.fold([try record(a, offset: 0), try record(b, offset: 1), try record(notifier, offset: 2)])
        #expect(directory.owner(of: 3)?.instance == "b")
        #expect(directory.owner(of: 4) == nil)
        directory.fold([KafkaRecord(topic: HeraldTopic.owners.name, partition: 0, offset: 3, key: Array("x".utf8), value: Array("{}".utf8))])
        #expect(directory.owner(of: 3)?.url == "http://b:8081")
    }
}
