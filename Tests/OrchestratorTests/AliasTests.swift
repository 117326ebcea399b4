import Foundation
import GRDB
import HeraldTestSupport
import Shared
import Testing

@testable import PartitionStore
@testable import OrchestratorDomain

let crm7 = UserAlias(label: "crm", name: "lead-7")

func updateOnly(_ flag: Bool) -> [JSONMember] { flag ? [JSONMember("update_existing_only", .bool(true))] : [] }

func purchase(_ product: String, price: Double, quantity: Int, revenue: Double?) -> [JSONMember] {
    [JSONMember("purchase", Purchase(
        productID: product, currency: "USD", price: price, quantity: quantity, revenueUSD: revenue, time: nil,
        properties: [("color", .string("red"))]).json)]
}

extension JSONValue {
    var aliasPairs: [String] {
        guard case .array(let items)? = self["aliases"] else { return [] }
        return items.compactMap { item in
            guard let label = item["alias_label"]?.stringValue, let name = item["alias_name"]?.stringValue else { return nil }
            return "\(label):\(name)"
        }
    }
}

/// Braze's aliases (braze-rules §1.2, §1.3, rule 15) across partitions, under several interleavings and with every
/// orchestrator record delivered twice.
@Suite("Aliases: alias-only profiles, identification, one holder per alias", .serialized)
struct AliasTests {
    static let seeds: [UInt64] = [1, 2, 3, 4, 5, 6, 7, 8]

    @Test("an alias-only profile merges into a new user when identified; later writes by the alias reach the user", arguments: seeds)
    func identifyNewUserMerges(seed: UInt64) async throws {
        let cluster = try Cluster(seed: seed)
        cluster.duplicateOutputs = seed % 2 == 0
        cluster.server(.profileUpdate, "a1", alias: crm7, attribute("plan", "trial") + updateOnly(false))
        cluster.server(.event, "a2", alias: crm7, event("VISITED"))
        cluster.server(.purchase, "a3", alias: crm7, purchase("sku", price: 10, quantity: 3, revenue: 30))
        try await cluster.settle()
        let home = try #require(try await cluster.profile(ProfileKey.alias("demo", crm7)))
        #expect(home["events"]?["e.VISITED"]?.count == 1)

        cluster.server(.alias, "id1", customID: "ann", alias: crm7)
        try await cluster.settle()
        cluster.server(.event, "a4", alias: crm7, event("VISITED"))
        try await cluster.settle()

        let ann = try #require(try await cluster.profile("demo/ann"))
        #expect(ann["custom"]?["c.plan"] == .string("trial"))
        #expect(ann["events"]?["e.VISITED"]?.count == 2)
        #expect(ann["events"]?["e.PURCHASE"]?.count == 3)
        #expect(ann["purchases"]?["sku"]?["count"] == .number("3"))
        #expect(ann["purchases"]?["sku"]?["revenue_usd"] == .number("30.0"))
        #expect(ann.aliasPairs == ["crm:lead-7"])
        #expect(try await cluster.profile(ProfileKey.alias("demo", crm7)) == nil)
        #expect(try await cluster.aliasLink(crm7) == "ann")
        #expect(cluster.deadLetters.isEmpty)
    }

    @Test("identified as a user who already has a profile: linked, not merged (braze-rules §1.2)", arguments: seeds)
    func identifyExistingDoesNotMerge(seed: UInt64) async throws {
        let cluster = try Cluster(seed: seed)
        cluster.server(.profileUpdate, "s1", customID: "ann", attribute("plan", "gold"))
        cluster.server(.profileUpdate, "a1", alias: crm7, attribute("plan", "trial") + updateOnly(false))
        cluster.server(.event, "a2", alias: crm7, event("VISITED"))
        try await cluster.settle()
        cluster.server(.alias, "id1", customID: "ann", alias: crm7)
        try await cluster.settle()
        cluster.server(.event, "a3", alias: crm7, event("CLICKED"))
        try await cluster.settle()
        let ann = try #require(try await cluster.profile("demo/ann"))
        #expect(ann["custom"]?["c.plan"] == .string("gold"))
        #expect(ann["events"]?["e.VISITED"] == nil)
        #expect(ann["events"]?["e.CLICKED"]?.count == 1)
        #expect(try await cluster.profile(ProfileKey.alias("demo", crm7)) == nil)
    }

    @Test("a label/name pair belongs to one user: of two claims, one wins and the other forgets it", arguments: seeds)
    func oneHolder(seed: UInt64) async throws {
        let cluster = try Cluster(seed: seed)
        cluster.duplicateOutputs = true
        cluster.server(.alias, "c1", customID: "ann", alias: crm7)
        cluster.server(.alias, "c2", customID: "bob", alias: crm7)
        try await cluster.settle()
        let holder = try #require(try await cluster.aliasLink(crm7))
        let ann = try #require(try await cluster.profile("demo/ann")).aliasPairs
        let bob = try #require(try await cluster.profile("demo/bob")).aliasPairs
        #expect(holder == "ann" || holder == "bob")
        #expect(ann == (holder == "ann" ? ["crm:lead-7"] : []))
        #expect(bob == (holder == "bob" ? ["crm:lead-7"] : []))
        // Writes by the alias reach its holder only.
        cluster.server(.event, "e1", alias: crm7, event("CLICKED"))
        try await cluster.settle()
        #expect(try await cluster.profile("demo/\(holder)")?["events"]?["e.CLICKED"]?.count == 1)
        #expect(try await cluster.profile("demo/\(holder == "ann" ? "bob" : "ann")")?["events"]?["e.CLICKED"] == nil)
    }

    @Test("one name per label: a new name frees the old one, which another user may then claim", arguments: seeds)
    func oneNamePerLabel(seed: UInt64) async throws {
        let cluster = try Cluster(seed: seed)
        let crm8 = UserAlias(label: "crm", name: "lead-8")
        cluster.server(.alias, "c1", customID: "ann", alias: crm7)
        try await cluster.settle()
        cluster.server(.alias, "c2", customID: "ann", alias: crm8)
        try await cluster.settle()
        cluster.server(.alias, "c3", customID: "bob", alias: crm7)
        try await cluster.settle()
        #expect(try await cluster.profile("demo/ann")?.aliasPairs == ["crm:lead-8"])
        #expect(try await cluster.profile("demo/bob")?.aliasPairs == ["crm:lead-7"])
        #expect(try await cluster.aliasLink(crm7) == "bob")
        #expect(try await cluster.aliasLink(crm8) == "ann")
    }

    @Test("update only: writes to a profile that does not exist are dropped, never creating it")
    func updateExistingOnly() async throws {
        let cluster = try Cluster()
        // By alias, update-only is Braze's default: nothing is created.
        cluster.server(.profileUpdate, "a1", alias: crm7, attribute("plan", "trial") + updateOnly(true))
        cluster.server(.event, "e1", customID: "ann", event("CLICKED") + updateOnly(true))
        try await cluster.settle()
        #expect(try await cluster.profile(ProfileKey.alias("demo", crm7)) == nil)
        #expect(try await cluster.profile("demo/ann") == nil)
        cluster.server(.profileUpdate, "s1", customID: "ann", attribute("plan", "gold"))
        cluster.server(.event, "e2", customID: "ann", event("CLICKED") + updateOnly(true))
        try await cluster.settle()
        #expect(try await cluster.profile("demo/ann")?["events"]?["e.CLICKED"]?.count == 1)
    }

    @Test("a deleted user's aliases are free again; a delete by alias deletes the user holding it")
    func deleteFreesAliases() async throws {
        let cluster = try Cluster()
        cluster.server(.alias, "c1", customID: "ann", alias: crm7)
        try await cluster.settle()
        cluster.server(.profileDelete, "d1", customID: "ann")
        try await cluster.settle()
        #expect(try await cluster.aliasLink(crm7) == nil)
        cluster.server(.alias, "c2", customID: "bob", alias: crm7)
        try await cluster.settle()
        #expect(try await cluster.aliasLink(crm7) == "bob")
        cluster.server(.profileDelete, "d2", alias: crm7)
        try await cluster.settle()
        #expect(try await cluster.profile("demo/bob") == nil)
        #expect(try await cluster.aliasLink(crm7) == nil)
    }
}

@Suite("Braze's attribute and purchase rules in the profile")
struct BrazeProfileRulesTests {
    func increment(_ name: String, _ amount: Int64) -> [JSONMember] {
        [JSONMember("profile", .object([JSONMember("custom_attributes", .object([
            JSONMember("\(name).i", .object([JSONMember("$inc", .number(String(amount)))])),
        ]))]))]
    }

    func custom(_ members: [JSONMember]) -> [JSONMember] {
        [JSONMember("profile", .object([JSONMember("custom_attributes", .object(members))]))]
    }

    @Test("increments add to an integer, create an unset one, are ignored on another type (rule 4)")
    func increments() async throws {
        let cluster = try Cluster()
        cluster.server(.profileUpdate, "i1", customID: "ann", increment("visits", 2))
        cluster.server(.profileUpdate, "i2", customID: "ann", increment("visits", -5))
        cluster.server(.profileUpdate, "s1", customID: "ann", attribute("plan", "gold"))
        cluster.server(.profileUpdate, "i3", customID: "ann", increment("plan", 1))
        cluster.server(.profileUpdate, "i3", customID: "ann", increment("visits", 100))  // a replay: applied once
        try await cluster.settle()
        let ann = try #require(try await cluster.profile("demo/ann"))
        #expect(ann["custom"]?["c.visits"] == .number("-3"))
        #expect(ann["custom"]?["c.plan"] == .string("gold"))
    }

    @Test("arrays keep 25 items by default, up to the attribute's own limit: a set keeps the first, an add drops the oldest")
    func arrayLimits() async throws {
        let directory = temporaryDirectory()
        let database = try OrchestratorPartition.open(directory: directory, partition: 0)
        defer { try? database.close() }
        let rules = EngagementRules(config: try configuration([#"{"kind":"project","id":"demo","array_limits":{"colors":100}}"#]))
        let items = (1...120).map { JSONValue.string("c\($0)") }
        func record(_ id: String, _ members: [JSONMember], offset: Int64) -> KafkaRecord {
            let ingest = IngestRecord(
                op: .profileUpdate, id: id, project: "demo", source: .server, customID: "ann", installationID: nil,
                receivedAt: t0, fields: custom(members))
            return KafkaRecord(topic: HeraldTopic.ingest.name, partition: 0, offset: offset, key: Array(ingest.key.utf8), value: ingest.value)
        }
        _ = try await database.applyBatch(
            [
                record("s1", [JSONMember("colors.a", .array(Array(items.prefix(100)))), JSONMember("tags.a", .array(Array(items.prefix(30))))], offset: 0),
                record("s2", [JSONMember("tags.a", .object([JSONMember("$add", .array([.string("new")]))]))], offset: 1),
                record("s3", [JSONMember("colors.a", .object([JSONMember("$add", .array([.string("c101")]))]))], offset: 2),
            ],
            apply: { db, record in try OrchestratorApplier.apply(db, record: record, rules: rules) })
        let ann = try #require(try await database.read { try ProfileView.json($0, key: "demo/ann") })
        guard case .array(let colors)? = ann["custom"]?["c.colors"], case .array(let tags)? = ann["custom"]?["c.tags"] else {
            Issue.record("arrays missing: \(ann)")
            return
        }
        #expect(colors.count == 100)
        #expect(colors.first == .string("c2") && colors.last == .string("c101"))
        #expect(tags.count == 25)
        #expect(tags.first == .string("c2") && tags.last == .string("new"))
    }
}
