import Foundation
import HeraldTestSupport
import Shared
import Testing

@testable import OrchestratorDomain

/// Signed identity (docs/security.md): a write whose app proves no custom ID (`unsigned`) changes only anonymous data.
/// Once its installation belongs to a user, such a write reaches nobody: it is dead-lettered at the installation's home
/// instead of being forwarded to the profile, but for an opt-out, which only stops sends to the device that asks.
@Suite("Identity: unsigned writes never reach a user's profile", .serialized)
struct SignedIdentityTests {
    @Test("through a linked installation: refused and dead-lettered, the profile unchanged; an opt-out goes through", arguments: IdentityTests.seeds)
    func refusedThroughLink(seed: UInt64) async throws {
        let cluster = try Cluster(seed: seed)
        // Before any login, the installation's own writes apply to its anonymous profile.
        cluster.app(.profileUpdate, "a1", installation: "I", unsigned: true, attribute("plan", "free"))
        cluster.app(.pushToken, "a2", installation: "I", unsigned: true, push(tokenA))
        cluster.app(.identify, "id1", installation: "I", customID: "paul")
        try await cluster.settle()
        #expect(try await cluster.link("I") == .some("paul"))
        #expect(try await cluster.profile("demo/paul")?["custom"]?["c.plan"] == .string("free"))
        // The attacker knows the installation id, not paul's proof.
        let refused: [(IngestOp, [JSONMember])] = [
            (.profileUpdate, attribute("plan", "evil")), (.event, event("STOLEN")), (.pushToken, push(tokenB)),
            (.installation, installationFields([JSONMember("timezone", .string("Asia/Tokyo"))])),
            (.location, [JSONMember("location", .object([JSONMember("latitude", .number("1")), JSONMember("longitude", .number("2"))]))]),
            (.optIn, []), (.wipe, []), (.logout, []),
        ]
        for (index, (op, fields)) in refused.enumerated() {
            cluster.app(op, "x\(index)", installation: "I", unsigned: true, fields)
        }
        try await cluster.settle()
        #expect(cluster.deadLetters.count == refused.count)
        #expect(cluster.deadLetters.allSatisfy { $0.reason.hasPrefix("unsigned_write_to_identified_profile") })
        let paul = try #require(try await cluster.profile("demo/paul"))
        #expect(paul["custom"]?["c.plan"] == .string("free"))
        #expect(paul["events"]?["e.STOLEN"] == nil)
        #expect(paul["installations"]?[0]?["push"]?["token"] == .string(tokenA), "\(paul)")
        #expect(paul["installations"]?[0]?["native"]?["b.timezone"] != .string("Asia/Tokyo"))
        #expect(try await cluster.link("I") == .some("paul"))
        #expect(try await cluster.holders("I") == ["demo/paul"])
        // An opt-out is the one unsigned write that goes through: it only stops sends to the device that asks.
        cluster.app(.optOut, "o1", installation: "I", unsigned: true)
        try await cluster.settle()
        #expect(try await cluster.profile("demo/paul")?["installations"]?[0]?["opted_out"] == .bool(true))
        #expect(cluster.deadLetters.count == refused.count)
    }

    @Test("a logout naming its user undoes only a link to that user; the same write without the flag is an old record, applied", arguments: IdentityTests.seeds)
    func logoutFrom(seed: UInt64) async throws {
        let cluster = try Cluster(seed: seed)
        cluster.app(.identify, "id1", installation: "I", customID: "paul")
        try await cluster.settle()
        // bob's proof (the attacker's own account) does not log paul's device out.
        cluster.app(.logout, "l1", installation: "I", [JSONMember("from_custom_id", .string("bob"))])
        try await cluster.settle()
        #expect(try await cluster.link("I") == .some("paul"))
        cluster.app(.logout, "l2", installation: "I", [JSONMember("from_custom_id", .string("paul"))])
        try await cluster.settle()
        #expect(try await cluster.link("I") == .some(nil))
        #expect(try await cluster.holders("I") == ["demo/install/I"])
        #expect(cluster.deadLetters.isEmpty)
        // Records from before signed identity (no flag) keep their meaning: a write naming a linked installation is
        // forwarded to its user.
        cluster.app(.identify, "id2", installation: "I", customID: "paul")
        try await cluster.settle()
        cluster.app(.event, "e1", installation: "I", event("OPENED"))
        try await cluster.settle()
        #expect(try await cluster.profile("demo/paul")?["events"]?["e.OPENED"]?.count == 1)
    }
}
