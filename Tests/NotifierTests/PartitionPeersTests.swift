import Foundation
import Hummingbird
import HummingbirdTesting
import ServiceSupport
import Shared
import Testing

/// `PartitionPeers`, the generic part of the inbox's and SMS replies' questions to other instances: which instance
/// answers for which partition, and every way a partition can go unanswered, which must fail the whole question rather
/// than leave the partition out.
@Suite("Partition peers: questions to the owners of other partitions")
struct PartitionPeersTests {
    /// Which partitions were asked, and the answer for them.
    struct Sum: Codable, Sendable, Hashable { var partitions: [Int32] }

    func announcement(_ instance: String, _ url: String, key: String?, partition: Int32) -> OwnerAnnouncement {
        OwnerAnnouncement(service: "notifier", partition: partition, instance: instance, url: url, at: Date(), peerKey: key)
    }

    @Test("the partitions run here are answered here, the others by their owner in one request; none left out")
    func answers() async throws {
        // The peer "b" runs partitions 2 and 3, and answers 503 for any other.
        let b = PartitionPeers(instance: "b", owner: { _ in nil }, runs: { [2, 3].contains($0) })
        let router = Router(context: ServiceRequestContext.self)
        b.answer(String.self, at: "/v1/peers/test", on: router) { question, partitions in
            #expect(question == "which")
            return partitions.allSatisfy { [2, 3].contains($0) } ? Sum(partitions: partitions) : nil
        }
        try await Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0))).test(.live) { client in
            let url = "http://127.0.0.1:\(client.port!)"
            func asker(_ owners: [Int32: OwnerAnnouncement]) -> PartitionPeers {
                PartitionPeers(instance: "a", owner: { owners[$0] }, runs: { [0, 1].contains($0) })
            }
            let owners = Dictionary(uniqueKeysWithValues: (2...3).map { ($0, announcement("b", url, key: b.key, partition: $0)) })
            let answers: [Sum] = try await asker(owners).ask("which", about: [3, 0, 2, 1, 0], at: "/v1/peers/test") { local in
                Sum(partitions: local)
            }
            #expect(Set(answers) == [Sum(partitions: [0, 1]), Sum(partitions: [2, 3])])

            // Every way a partition goes unanswered fails the question.
            func unavailable(_ owners: [Int32: OwnerAnnouncement], about partitions: [Int32], local: Sum? = Sum(partitions: [])) async -> String? {
                do {
                    let _: [Sum] = try await asker(owners).ask("which", about: partitions, at: "/v1/peers/test") { _ in local }
                    return nil
                } catch let error as PartitionPeers.Unavailable {
                    return error.reason
                } catch {
                    return "\(error)"
                }
            }
            #expect(await unavailable([:], about: [2]) == "no instance runs it")
            #expect(await unavailable([2: announcement("a", url, key: "k", partition: 2)], about: [2]) == "no instance runs it")
            #expect(await unavailable([2: announcement("b", url, key: nil, partition: 2)], about: [2])?.contains("takes no questions") == true)
            #expect(await unavailable([2: announcement("b", url, key: "wrong", partition: 2)], about: [2]) == "b: answered 403")
            #expect(await unavailable([1: announcement("b", url, key: b.key, partition: 1)], about: [0, 1], local: nil) == "it stopped running here")
            // b is named the owner of 4, which it does not run (a stale announcement): 503.
            #expect(await unavailable([4: announcement("b", url, key: b.key, partition: 4)], about: [4]) == "b: answered 503")
            #expect(await unavailable([2: announcement("b", "http://127.0.0.1:1", key: b.key, partition: 2)], about: [2])?
                .hasPrefix("b: did not answer") == true)
        }
    }
}
