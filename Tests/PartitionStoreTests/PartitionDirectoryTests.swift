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

    /// Whoever can write herald.owners chooses where an instance forwards a read (with the app's key and the user's
    /// proof) and whose answer it passes back: an announced address must be of the instance's own form.
    @Test(
        "announced addresses: this instance's scheme and port, a host and nothing else",
        arguments: [
            ("http://10.0.0.7:8081", true), ("http://orchestrator-1.herald-orchestrator-pods:8081", true), ("http://[fd00::7]:8081", true),
            ("http://10.0.0.7:8081/", true), ("https://10.0.0.7:8081", false), ("http://10.0.0.7:9999", false), ("http://10.0.0.7", false),
            ("http://10.0.0.7:8081/steal", false), ("http://10.0.0.7:8081?x=1", false), ("http://user:pw@10.0.0.7:8081", false),
            ("http://10.0.0.7:8081#f", false), ("ftp://10.0.0.7:8081", false), ("10.0.0.7:8081", false), ("", false),
        ] as [(String, Bool)])
    func addresses(url: String, accepted: Bool) throws {
        let policy = OwnerAddressPolicy(advertised: "http://10.0.0.3:8081", httpPort: 8081)
        #expect(policy.accepts(url) == accepted)
        let directory = PartitionDirectory(service: "orchestrator", addresses: policy)
        let valid = OwnerAnnouncement(service: "orchestrator", partition: 1, instance: "a", url: "http://10.0.0.5:8081", at: Date())
        let announced = OwnerAnnouncement(service: "orchestrator", partition: 1, instance: "x", url: url, at: Date())
        let refused = directory.fold([try record(valid, offset: 0), try record(announced, offset: 1)])
        #expect(directory.owner(of: 1)?.instance == (accepted ? "x" : "a"))
        #expect(refused.map(\.instance) == (accepted ? [] : ["x"]))
    }

    @Test("without an advertised URL: http and the port it listens on (any, when it picks one at start)")
    func ownForm() {
        #expect(OwnerAddressPolicy(advertised: nil, httpPort: 8082) == OwnerAddressPolicy(advertised: "http://x:8082", httpPort: 0))
        #expect(OwnerAddressPolicy(advertised: nil, httpPort: 0).accepts("http://127.0.0.1:41234"))
        #expect(!OwnerAddressPolicy(advertised: nil, httpPort: 0).accepts("http://127.0.0.1:41234/x"))
        #expect(OwnerAddressPolicy(advertised: "https://n.example", httpPort: 8082).accepts("https://m.example:443"))
    }
}
