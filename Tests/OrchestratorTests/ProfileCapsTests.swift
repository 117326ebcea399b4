import Foundation
import HeraldTestSupport
import Shared
import Testing

@testable import OrchestratorDomain

/// A project's `profile_limits`: what a profile may hold of attribute names, event names, product ids and
/// installations. A public key could otherwise grow a profile without bound (and its contact snapshot past the broker's
/// 1 MB), one new name at a time.
@Suite("Profiles: limits on what one profile holds", .serialized)
struct ProfileCapsTests {
    static let limits = #"{"kind":"project","id":"demo","profile_limits":{"attributes":3,"event_names":2,"product_ids":2,"installations":2}}"#

    static func purchase(_ product: String) -> [JSONMember] {
        [JSONMember("purchase", Purchase(productID: product, currency: "EUR", price: 1, quantity: 1, revenueUSD: 1.08, time: nil, properties: []).json)]
    }

    @Test("past a limit, what is new is refused and named in a dead letter; what the profile holds is still updated")
    func refusedPastTheLimit() async throws {
        let cluster = try Cluster()
        cluster.rules = EngagementRules(config: try configuration(Self.limits))
        cluster.server(
            .profileUpdate, "a1", customID: "paul",
            [JSONMember("profile", .object([JSONMember("custom_attributes", .object([
                JSONMember("a.s", .string("1")), JSONMember("b.s", .string("1")), JSONMember("c.s", .string("1")),
            ]))]))])
        try await cluster.settle()
        // d is new: refused; a is held: updated; a removal always goes.
        cluster.server(
            .profileUpdate, "a2", customID: "paul",
            [JSONMember("profile", .object([JSONMember("custom_attributes", .object([
                JSONMember("d.s", .string("new")), JSONMember("a.s", .string("2")), JSONMember("b", .null),
            ]))]))])
        cluster.server(.event, "e1", customID: "paul", event("ONE"))
        cluster.server(.event, "e2", customID: "paul", event("TWO"))
        cluster.server(.event, "e3", customID: "paul", event("THREE"))
        cluster.server(.event, "e4", customID: "paul", event("ONE"))
        cluster.server(.purchase, "p1", customID: "paul", Self.purchase("sku-1"))
        cluster.server(.purchase, "p2", customID: "paul", Self.purchase("sku-2"))
        cluster.server(.purchase, "p3", customID: "paul", Self.purchase("sku-3"))
        try await cluster.settle()
        let paul = try #require(try await cluster.profile("demo/paul"))
        #expect(paul["custom"]?["c.a"] == .string("2") && paul["custom"]?["c.b"] == nil && paul["custom"]?["c.d"] == nil)
        #expect(paul["events"]?["e.ONE"]?.count == 2 && paul["events"]?["e.THREE"] == nil)
        #expect(paul["purchases"]?["sku-3"] == nil && paul["purchases"]?["sku-2"] != nil)
        let reasons = cluster.deadLetters.map(\.reason)
        #expect(reasons == [
            "profile_limit: the profile holds its 3 attributes (the project's profile_limits.attributes); refused: d",
            "profile_limit: the profile holds its 2 event_names (the project's profile_limits.event_names); refused: THREE",
            "profile_limit: the profile holds its 2 product_ids (the project's profile_limits.product_ids); refused: sku-3",
        ])
        // With b removed, there is room for one more name.
        cluster.server(.profileUpdate, "a3", customID: "paul", attribute("d", "now"))
        try await cluster.settle()
        #expect(try await cluster.profile("demo/paul")?["custom"]?["c.d"] == .string("now"))
    }

    @Test("a third installation does not join a profile limited to two: its identify and its writes are refused")
    func installations() async throws {
        let cluster = try Cluster()
        cluster.rules = EngagementRules(config: try configuration(Self.limits))
        for installation in ["I1", "I2", "I3"] {
            cluster.app(.identify, "id-\(installation)", installation: installation, customID: "paul")
            try await cluster.settle()
        }
        cluster.app(.event, "e-I3", installation: "I3", customID: "paul", event("OPENED"))
        try await cluster.settle()
        let paul = try #require(try await cluster.profile("demo/paul"))
        #expect(paul.installationIDs.sorted() == ["I1", "I2"])
        #expect(try await cluster.link("I3") != .some("paul"))
        #expect(paul["events"]?["e.OPENED"] == nil)
        #expect(cluster.deadLetters.map(\.reason).allSatisfy { $0.contains("profile_limits.installations") && $0.hasSuffix("refused: I3") })
        #expect(cluster.deadLetters.count == 2)
    }
}
