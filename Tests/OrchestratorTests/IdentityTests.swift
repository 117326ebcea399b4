import Foundation
import GRDB
import HeraldTestSupport
import Shared
import Testing

@testable import PartitionStore
@testable import OrchestratorDomain

/// Several partition databases and what the broker does between them: every output to `herald.ingest` is delivered to
/// the partition of its key, in order per partition; the order across partitions comes from a seeded generator, so
/// that a scenario can be run under many interleavings. Contacts keep the latest value per key, as compaction does.
final class Cluster {
    let databases: [PartitionDatabase]
    private var pending: [[KafkaRecord]]
    private var offsets: [Int64]
    private var generator: SeededGenerator
    /// Every output is delivered twice (an outbox replayed after a crash, a producer retry): replays must be no-ops.
    var duplicateOutputs = false
    private(set) var contacts: [String: JSONValue?] = [:]
    private(set) var deadLetters: [DeadLetter] = []
    /// Send requests, with their key.
    private(set) var sends: [(key: String, send: SendRequest)] = []
    /// The orchestrator's parts of erasures' receipts (`herald.erasures`).
    private(set) var erasures: [ErasureReceipt] = []
    /// Every record the partitions produced to `herald.ingest` (identity moves, claims, forwarded writes), in order, with
    /// its key and headers.
    private(set) var producedIngest: [(key: String, value: [UInt8], headers: [KafkaHeader])] = []
    private var clock = t0

    init(partitions: Int = 3, seed: UInt64 = 1) throws {
        let directory = temporaryDirectory()
        databases = try (0..<partitions).map { try OrchestratorPartition.open(directory: directory, partition: Int32($0)) }
        pending = Array(repeating: [], count: partitions)
        offsets = Array(repeating: 0, count: partitions)
        generator = SeededGenerator(seed: seed)
    }

    deinit {
        for database in databases { try? database.close() }
    }

    func partition(of key: String) -> Int {
        var hash: UInt32 = 2_166_136_261
        for byte in key.utf8 { hash = (hash ^ UInt32(byte)) &* 16_777_619 }
        return Int(hash % UInt32(databases.count))
    }

    /// The segments and campaigns the partitions apply (none unless a test sets them).
    var rules = EngagementRules.none

    private func enqueue(topic: String, key: String, value: [UInt8]?, headers: [KafkaHeader] = []) {
        let number = partition(of: key)
        pending[number].append(
            KafkaRecord(
                topic: topic, partition: Int32(number), offset: offsets[number], key: Array(key.utf8), value: value,
                headers: headers))
        offsets[number] += 1
    }

    /// A write from an app (installation `installation`, identified as `customID` if given), a second after the last.
    /// `unsigned`: the ingest's flag for a write of an app with signed identity that proves no custom ID.
    func app(
        _ op: IngestOp, _ id: String, installation: String, customID: String? = nil, at: Date? = nil, requestID: String? = nil,
        unsigned: Bool = false, _ fields: [JSONMember] = []
    ) {
        clock = at ?? clock + 1
        var record = IngestRecord(
            op: op, id: id, project: "demo", source: .app(id: "ios", dev: false), customID: customID,
            installationID: installation, receivedAt: clock, fields: fields)
        record.unsigned = unsigned
        enqueue(topic: HeraldTopic.ingest.name, key: record.key, value: record.value, headers: record.headers(requestID: requestID))
    }

    /// A server's write for a profile named by its custom ID or by a Braze alias (or, for a transactional push, by an
    /// installation or a raw token).
    func server(
        _ op: IngestOp, _ id: String, customID: String? = nil, alias: UserAlias? = nil, installation: String? = nil,
        token: String? = nil, _ fields: [JSONMember] = []
    ) {
        clock += 1
        var record = IngestRecord(
            op: op, id: id, project: "demo", source: .server, customID: customID, installationID: installation,
            receivedAt: clock, fields: fields, alias: alias)
        record.deviceToken = token
        enqueue(topic: HeraldTopic.ingest.name, key: record.key, value: record.value)
    }

    func delivery(_ report: DeliveryReport) throws {
        enqueue(topic: HeraldTopic.deliveries.name, key: report.key, value: try Wire.encode(report))
    }

    /// Delivers batches (all of one partition's pending records) until nothing is left.
    func settle() async throws {
        var rounds = 0
        while let number = pending.indices.filter({ !pending[$0].isEmpty }).randomElement(using: &generator) {
            rounds += 1
            precondition(rounds < 10_000, "the cluster does not settle")
            // Sometimes only part of the queue, so that partitions interleave within a scenario.
            let take = Int.random(in: 1...pending[number].count, using: &generator)
            let batch = Array(pending[number].prefix(take))
            pending[number].removeFirst(take)
            let rules = self.rules
            let outbox = try await databases[number].applyBatch(batch) { db, record in
                try OrchestratorApplier.apply(db, record: record, rules: rules)
            }
            for output in outbox {
                for _ in 0..<(duplicateOutputs ? 2 : 1) {
                    switch output.topic {
                    case HeraldTopic.ingest.name:
                        producedIngest.append((output.key, output.value ?? [], output.headers))
                        enqueue(topic: output.topic, key: output.key, value: output.value, headers: output.headers)
                    case HeraldTopic.contacts.name:
                        contacts.updateValue(try output.value.map { try JSONParser.parse($0) }, forKey: output.key)
                    case HeraldTopic.dlq.name:
                        deadLetters.append(try Wire.decode(DeadLetter.self, from: output.value ?? []))
                    case HeraldTopic.sendsPush.name:
                        sends.append((output.key, try Wire.decode(SendRequest.self, from: output.value ?? [])))
                    case HeraldTopic.deliveries.name:
                        // The orchestrator's own reports (an app's opens), read back as the topic's consumer does.
                        enqueue(topic: output.topic, key: output.key, value: output.value, headers: output.headers)
                    case HeraldTopic.erasures.name:
                        erasures.append(try Wire.decode(ErasureReceipt.self, from: output.value ?? []))
                    case HeraldTopic.suppressions.name:
                        break  // a delete's do_not_contact (ErasureTests)
                    default: Issue.record("unexpected output to \(output.topic)")
                    }
                }
            }
            try await databases[number].markProduced(outbox.map(\.id))
        }
    }

    func profile(_ key: String) async throws -> JSONValue? {
        try await databases[partition(of: key)].read { try ProfileView.json($0, key: key) }
    }

    func aliasLink(_ alias: UserAlias) async throws -> String? {
        try await databases[partition(of: ProfileKey.alias("demo", alias))].read { db in
            try AliasLinksTable(db).holder(project: "demo", alias)
        }
    }

    func link(_ installation: String) async throws -> String?? {
        try await databases[partition(of: "demo/install/\(installation)")].read { db in
            try InstallationLinksTable(db).link(project: "demo", installationID: installation).map(\.customID)
        }
    }

    /// Every profile key holding a row for the installation, over all partitions.
    func holders(_ installation: String) async throws -> [String] {
        var keys: [String] = []
        for database in databases {
            keys += try await database.read {
                try String.fetchAll($0, sql: "SELECT profile_key FROM installations WHERE installation_id = ?", arguments: [installation])
            }
        }
        return keys.sorted()
    }
}

/// SplitMix64: a repeatable order for a seed.
struct SeededGenerator: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

func event(_ name: String) -> [JSONMember] {
    [JSONMember("event", .object([JSONMember("name", .string(name)), JSONMember("attributes", .object([]))]))]
}

func attribute(_ name: String, _ value: String) -> [JSONMember] {
    [JSONMember("profile", .object([JSONMember("custom_attributes", .object([JSONMember("\(name).s", .string(value))]))]))]
}

func push(_ token: String) -> [JSONMember] {
    [JSONMember("push", .object([JSONMember("token", .string(token)), JSONMember("environment", .string("production"))]))]
}

func installationFields(_ members: [JSONMember]) -> [JSONMember] { [JSONMember("installation", .object(members))] }

let tokenA = String(repeating: "a1", count: 32)
let tokenB = String(repeating: "b2", count: 32)

extension JSONValue {
    var count: Int? { if case .number(let literal)? = self["count"] { Int(literal) } else { nil } }
    var installationIDs: [String] {
        guard case .array(let items)? = self["installations"] else { return [] }
        return items.compactMap { if case .string(let id)? = $0["installation_id"] { id } else { nil } }
    }
}

@Suite("Identity: identify, logout, forwarding, merge, tokens", .serialized)
struct IdentityTests {
    /// Several cross-partition orders per scenario.
    static let seeds: [UInt64] = [1, 2, 3, 4, 5, 6, 7, 8]

    @Test("anonymous, then identify as a new user: the anonymous history merges into the profile", arguments: seeds)
    func identifyMerges(seed: UInt64) async throws {
        let cluster = try Cluster(seed: seed)
        cluster.app(.event, "e1", installation: "I", event("OPENED"))
        cluster.app(.event, "e2", installation: "I", event("OPENED"))
        cluster.app(.profileUpdate, "p1", installation: "I", attribute("plan", "free"))
        cluster.app(.installation, "i1", installation: "I", installationFields([JSONMember("app_version", .string("2.1"))]))
        cluster.app(.pushToken, "t1", installation: "I", push(tokenA))
        try await cluster.settle()
        #expect(try await cluster.profile("demo/install/I")?["events"]?["e.OPENED"]?.count == 2)

        cluster.app(.identify, "id1", installation: "I", customID: "paul")
        cluster.app(.event, "e3", installation: "I", customID: "paul", event("OPENED"))
        try await cluster.settle()

        let paul = try #require(try await cluster.profile("demo/paul"))
        #expect(paul["events"]?["e.OPENED"]?.count == 3)
        #expect(paul["custom"]?["c.plan"] == .string("free"))
        #expect(paul.installationIDs == ["I"])
        #expect(paul["installations"]?[0]?["native"]?["b.app_version"] == .string("2.1"))
        #expect(paul["installations"]?[0]?["push"]?["token"] == .string(tokenA))
        #expect(try await cluster.profile("demo/install/I") == nil)
        #expect(try await cluster.link("I") == .some("paul"))
        #expect(try await cluster.holders("I") == ["demo/paul"])
        // The notifier's view: paul has the installation and its token; the anonymous profile is tombstoned.
        #expect(cluster.contacts["demo/paul"]??["installations"]?[0]?["token"] == .string(tokenA))
        #expect(cluster.contacts["demo/install/I"] == .some(nil))
        #expect(cluster.deadLetters.isEmpty)
    }

    @Test("identify as a user who already has a profile: no merge, the anonymous history is dropped", arguments: seeds)
    func identifyExistingDoesNotMerge(seed: UInt64) async throws {
        let cluster = try Cluster(seed: seed)
        cluster.server(.profileUpdate, "s1", customID: "paul", attribute("plan", "gold"))
        cluster.app(.event, "e1", installation: "I", event("OPENED"))
        cluster.app(.profileUpdate, "p1", installation: "I", attribute("plan", "free"))
        cluster.app(.pushToken, "t1", installation: "I", push(tokenA))
        try await cluster.settle()
        cluster.app(.identify, "id1", installation: "I", customID: "paul")
        try await cluster.settle()

        let paul = try #require(try await cluster.profile("demo/paul"))
        #expect(paul["events"]?["e.OPENED"] == nil)
        #expect(paul["custom"]?["c.plan"] == .string("gold"))
        // The installation (device state, token) moves either way.
        #expect(paul["installations"]?[0]?["push"]?["token"] == .string(tokenA))
        #expect(try await cluster.profile("demo/install/I") == nil)
    }

    @Test("merge happens once: the second device of a user does not bring its anonymous history")
    func mergeOnlyOnce() async throws {
        let cluster = try Cluster()
        cluster.app(.event, "a1", installation: "I1", event("OPENED"))
        cluster.app(.event, "b1", installation: "I2", event("OPENED"))
        cluster.app(.event, "b2", installation: "I2", event("OPENED"))
        try await cluster.settle()
        cluster.app(.identify, "id1", installation: "I1", customID: "paul")
        try await cluster.settle()
        cluster.app(.identify, "id2", installation: "I2", customID: "paul")
        try await cluster.settle()
        let paul = try #require(try await cluster.profile("demo/paul"))
        #expect(paul["events"]?["e.OPENED"]?.count == 1)
        #expect(paul.installationIDs.sorted() == ["I1", "I2"])
    }

    @Test("logout gives the installation back to its anonymous profile; later anonymous writes stay there", arguments: seeds)
    func logout(seed: UInt64) async throws {
        let cluster = try Cluster(seed: seed)
        cluster.app(.identify, "id1", installation: "I", customID: "paul")
        cluster.app(.pushToken, "t1", installation: "I", customID: "paul", push(tokenA))
        try await cluster.settle()
        cluster.app(.logout, "lo1", installation: "I")
        try await cluster.settle()
        cluster.app(.event, "e1", installation: "I", event("BROWSED"))
        try await cluster.settle()

        let paul = try #require(try await cluster.profile("demo/paul"))
        #expect(paul.installationIDs == [])
        #expect(paul["push_changelog"]?[1]?["change"] == .string("detached"))
        let anonymous = try #require(try await cluster.profile("demo/install/I"))
        #expect(anonymous["installations"]?[0]?["push"]?["token"] == .string(tokenA))
        #expect(anonymous["events"]?["e.BROWSED"]?.count == 1)
        #expect(paul["events"]?["e.BROWSED"] == nil)
        #expect(try await cluster.link("I") == .some(nil))
        #expect(cluster.contacts["demo/paul"]??.installationIDs == [])
        #expect(cluster.contacts["demo/install/I"]??.installationIDs == ["I"])
    }

    @Test("a write that names only an identified installation is forwarded to its profile", arguments: seeds)
    func forwarding(seed: UInt64) async throws {
        let cluster = try Cluster(seed: seed)
        cluster.app(.identify, "id1", installation: "I", customID: "paul")
        try await cluster.settle()
        cluster.app(.event, "e1", installation: "I", event("OPENED"))
        cluster.app(.installation, "i1", installation: "I", installationFields([JSONMember("os_version", .string("18.1"))]))
        cluster.app(.pushToken, "t1", installation: "I", push(tokenA))
        try await cluster.settle()
        let paul = try #require(try await cluster.profile("demo/paul"))
        #expect(paul["events"]?["e.OPENED"]?.count == 1)
        #expect(paul["installations"]?[0]?["native"]?["b.os_version"] == .string("18.1"))
        #expect(paul["native"]?["b.is_push_optin"] == .bool(false))  // no permission reported yet
        #expect(try await cluster.profile("demo/install/I") == nil)
    }

    /// The correlation chain of docs/operability.md (ingest request log → "send decided" → the notifier's delivery line)
    /// holds when the write is forwarded: the request id goes with it, and with the records the orchestrator writes
    /// for it.
    @Test("a forwarded write keeps its request id, to the send it triggers", arguments: seeds)
    func forwardedRequestID(seed: UInt64) async throws {
        let cluster = try Cluster(seed: seed)
        cluster.rules = EngagementRules(
            config: try configuration(
                demoProject,
                #"{"kind":"template","id":"hi","project":"demo","channel":"push","variants":{"default":{"title":"Hi","body":"Opened"}}}"#,
                #"{"kind":"campaign","id":"opened","project":"demo","type":"transactional","trigger":{"event":"OPENED"},"reeligibility":"always","messages":[{"channel":"push","template":"hi"}]}"#))
        cluster.app(.identify, "id1", installation: "I", customID: "paul", requestID: "req-identify")
        try await cluster.settle()
        // The link request to the installation's home, and the move back, carry the identify's request id.
        let link = try #require(cluster.producedIngest.first { $0.value.contains(Array(#""op":"install_link""#.utf8)) })
        #expect(link.headers.contains(KafkaHeader(HeraldHeader.requestID, "req-identify")))
        // An app write naming only the installation reaches its home and is forwarded to paul, with its request id.
        cluster.app(.event, "e1", installation: "I", requestID: "req-42", event("OPENED"))
        try await cluster.settle()
        let forwarded = try #require(cluster.producedIngest.first { $0.value.contains(Array(#""id":"e1""#.utf8)) })
        #expect(forwarded.key == "demo/paul")
        #expect(forwarded.headers == [KafkaHeader(HeraldHeader.op, "event"), KafkaHeader(HeraldHeader.requestID, "req-42")])
        let send = try #require(cluster.sends.first)
        #expect(send.key == "demo/paul" && send.send.campaign == "opened" && send.send.requestID == "req-42")
    }

    /// A user holding a proof for their own custom ID once took another user's device with it (identify naming the
    /// victim's installation): its token, and its inbox's past notifications, followed. A device now belongs to the user
    /// who holds it until they log it out; the next user's app logs the previous one out first, as a shared phone's does.
    @Test("switching users on a device: after the previous user's logout, the installation and its token move", arguments: seeds)
    func switchUsers(seed: UInt64) async throws {
        let cluster = try Cluster(seed: seed)
        cluster.app(.identify, "id1", installation: "I", customID: "paul")
        cluster.app(.pushToken, "t1", installation: "I", customID: "paul", push(tokenA))
        // The logout may reach the installation's home before paul's link does (it comes from paul's partition): the
        // link then arrives stale and is refused.
        cluster.app(.logout, "lo1", installation: "I", [JSONMember("from_custom_id", .string("paul"))])
        cluster.app(.identify, "id2", installation: "I", customID: "anna")
        try await cluster.settle()
        #expect(try await cluster.holders("I") == ["demo/anna"])
        #expect(try await cluster.link("I") == .some("anna"))
        let anna = try #require(try await cluster.profile("demo/anna"))
        #expect(anna["installations"]?[0]?["push"]?["token"] == .string(tokenA))
        #expect(try await cluster.profile("demo/paul")?.installationIDs == [])
        #expect(cluster.contacts["demo/paul"]??.installationIDs == [])
        #expect(cluster.contacts["demo/anna"]??.installationIDs == ["I"])
        #expect(cluster.deadLetters.isEmpty, "\(cluster.deadLetters.map(\.reason))")
    }

    @Test("another user's identify, with their own proof, does not take a device its user has not logged out", arguments: seeds)
    func deviceStaysWithItsUser(seed: UInt64) async throws {
        let cluster = try Cluster(seed: seed)
        cluster.app(.identify, "id1", installation: "I", customID: "paul")
        cluster.app(.pushToken, "t1", installation: "I", customID: "paul", push(tokenA))
        try await cluster.settle()
        // mallory names paul's installation, identifies, and registers a token of her own for it.
        cluster.app(.identify, "id2", installation: "I", customID: "mallory")
        cluster.app(.pushToken, "t2", installation: "I", customID: "mallory", push(tokenB))
        try await cluster.settle()
        #expect(try await cluster.holders("I") == ["demo/paul"])
        #expect(try await cluster.link("I") == .some("paul"))
        let paul = try #require(try await cluster.profile("demo/paul"))
        #expect(paul["installations"]?[0]?["push"]?["token"] == .string(tokenA), "mallory's token never reaches paul's device row")
        #expect(try await cluster.profile("demo/mallory")?.installationIDs == [])
        #expect(cluster.contacts["demo/paul"]??.installationIDs == ["I"])
        #expect(cluster.contacts["demo/mallory"]??.installationIDs ?? [] == [])
        #expect(cluster.deadLetters.contains { $0.reason.hasPrefix("installation_held_by_another_user") })
        // Once paul logs out, mallory's next identify takes it (anonymous again, as a shared phone's next user).
        cluster.app(.logout, "lo1", installation: "I", [JSONMember("from_custom_id", .string("paul"))])
        try await cluster.settle()
        cluster.app(.identify, "id3", installation: "I", customID: "mallory")
        try await cluster.settle()
        #expect(try await cluster.holders("I") == ["demo/mallory"])
    }

    @Test("a token registered by another user's installation moves to it, and the move is recorded", arguments: seeds)
    func tokenMoves(seed: UInt64) async throws {
        let cluster = try Cluster(seed: seed)
        cluster.app(.identify, "id1", installation: "I1", customID: "paul")
        cluster.app(.pushToken, "t1", installation: "I1", customID: "paul", push(tokenA))
        try await cluster.settle()
        cluster.app(.identify, "id2", installation: "I2", customID: "anna")
        cluster.app(.pushToken, "t2", installation: "I2", customID: "anna", push(tokenA))
        try await cluster.settle()
        let paul = try #require(try await cluster.profile("demo/paul"))
        #expect(paul["installations"]?[0]?["push"]?["token"] == .null)
        let changes = try #require(paul["push_changelog"])
        #expect(changes[1]?["change"] == .string("moved_out"))
        #expect(changes[1]?["detail"] == .string("to demo/anna"))
        #expect(try await cluster.profile("demo/anna")?["installations"]?[0]?["push"]?["token"] == .string(tokenA))
        let installation = cluster.contacts["demo/paul"]??["installations"]?[0]
        #expect(installation?["installation_id"] != nil && installation?["token"] == nil, "no token: left out of the snapshot")
    }

    @Test("rapid identifies and logouts under any order: the installation ends where its link says", arguments: seeds)
    func convergence(seed: UInt64) async throws {
        let cluster = try Cluster(seed: seed)
        cluster.duplicateOutputs = seed % 2 == 0
        cluster.app(.pushToken, "t0", installation: "I", push(tokenA))
        cluster.app(.identify, "id1", installation: "I", customID: "paul")
        cluster.app(.event, "e1", installation: "I", event("OPENED"))
        cluster.app(.logout, "lo1", installation: "I")
        cluster.app(.identify, "id2", installation: "I", customID: "anna")
        cluster.app(.event, "e2", installation: "I", event("OPENED"))
        // anna's device moves to zoe once anna logs it out (a device stays with its user until then).
        cluster.app(.logout, "lo2", installation: "I", [JSONMember("from_custom_id", .string("anna"))])
        cluster.app(.identify, "id3", installation: "I", customID: "zoe")
        cluster.app(.event, "e3", installation: "I", customID: "zoe", event("OPENED"))
        try await cluster.settle()
        #expect(try await cluster.link("I") == .some("zoe"))
        #expect(try await cluster.holders("I") == ["demo/zoe"])
        let zoe = try #require(try await cluster.profile("demo/zoe"))
        #expect(zoe["installations"]?[0]?["push"]?["token"] == .string(tokenA))
        // Every event is counted exactly once, somewhere (duplicated outputs included).
        var total = 0
        for key in ["demo/paul", "demo/anna", "demo/zoe", "demo/install/I"] {
            total += try await cluster.profile(key)?["events"]?["e.OPENED"]?.count ?? 0
        }
        #expect(total == 3)
        #expect(cluster.deadLetters.isEmpty)
    }

    @Test("opt-out: unreachable until opt-in, and what the installation sends meanwhile is dropped")
    func optOut() async throws {
        let cluster = try Cluster()
        cluster.app(.identify, "id1", installation: "I", customID: "paul")
        cluster.app(.pushToken, "t1", installation: "I", customID: "paul", push(tokenA))
        cluster.app(
            .installation, "i1", installation: "I", customID: "paul",
            installationFields([JSONMember("notification_permission", .string("allowed"))]))
        try await cluster.settle()
        #expect(cluster.contacts["demo/paul"]??["installations"]?[0]?["push_reachable"] == .bool(true))
        cluster.app(.optOut, "o1", installation: "I", customID: "paul")
        cluster.app(.event, "e1", installation: "I", customID: "paul", event("OPENED"))
        try await cluster.settle()
        #expect(cluster.contacts["demo/paul"]??["installations"]?[0]?["push_reachable"] == .bool(false))
        #expect(cluster.contacts["demo/paul"]??["installations"]?[0]?["opted_out"] == .bool(true))
        #expect(try await cluster.profile("demo/paul")?["native"]?["b.is_push_optin"] == .bool(false))
        #expect(try await cluster.profile("demo/paul")?["events"]?["e.OPENED"] == nil)
        cluster.app(.optIn, "o2", installation: "I")  // forwarded from the home
        try await cluster.settle()
        #expect(cluster.contacts["demo/paul"]??["installations"]?[0]?["push_reachable"] == .bool(true))
    }

    @Test("wipe removes the installation and its link, and keeps the server's profile data", arguments: [1, 2, 3] as [UInt64])
    func wipe(seed: UInt64) async throws {
        let cluster = try Cluster(seed: seed)
        cluster.server(.profileUpdate, "s1", customID: "paul", attribute("plan", "gold"))
        cluster.app(.identify, "id1", installation: "I", customID: "paul")
        cluster.app(.pushToken, "t1", installation: "I", customID: "paul", push(tokenA))
        try await cluster.settle()
        cluster.app(.wipe, "w1", installation: "I", customID: "paul")
        try await cluster.settle()
        let paul = try #require(try await cluster.profile("demo/paul"))
        #expect(paul["custom"]?["c.plan"] == .string("gold"))
        #expect(paul.installationIDs == [])
        #expect(try await cluster.holders("I") == [])
        #expect(try await cluster.link("I") == nil)
        #expect(cluster.contacts["demo/paul"]??.installationIDs == [])

        // Wipe named by the installation only (logged-out app, or anonymous data).
        cluster.app(.identify, "id2", installation: "J", customID: "paul")
        cluster.app(.event, "e1", installation: "K", event("OPENED"))
        try await cluster.settle()
        cluster.app(.wipe, "w2", installation: "J")
        cluster.app(.wipe, "w3", installation: "K")
        try await cluster.settle()
        #expect(try await cluster.holders("J") == [])
        #expect(try await cluster.holders("K") == [])
        #expect(try await cluster.profile("demo/install/K") == nil)
        #expect(try await cluster.link("J") == nil)
    }

    @Test("delete removes the profile and its installations; their homes forget the link")
    func deleteUnlinks() async throws {
        let cluster = try Cluster()
        cluster.app(.identify, "id1", installation: "I", customID: "paul")
        try await cluster.settle()
        cluster.server(.profileDelete, "d1", customID: "paul")
        try await cluster.settle()
        #expect(try await cluster.profile("demo/paul") == nil)
        #expect(try await cluster.link("I") == .some(nil))
        cluster.app(.event, "e1", installation: "I", event("OPENED"))
        try await cluster.settle()
        #expect(try await cluster.profile("demo/install/I")?["events"]?["e.OPENED"]?.count == 1)
        #expect(try await cluster.profile("demo/paul") == nil)
        #expect(cluster.contacts["demo/paul"] == .some(nil))
    }
}

@Suite("Installations: natives, location, deliveries", .serialized)
struct InstallationTests {
    @Test("installation fields under their b. names; explicit language and region override the detected ones")
    func natives() async throws {
        let cluster = try Cluster()
        cluster.app(
            .installation, "i1", installation: "I", customID: "paul",
            installationFields([
                JSONMember("app_version", .string("2.1")), JSONMember("device_brand", .string("Apple")),
                JSONMember("device_model", .string("iPhone15,2")), JSONMember("detected_language", .string("de")),
                JSONMember("detected_region", .string("AT")), JSONMember("timezone", .string("Europe/Vienna")),
                JSONMember("notification_permission", .string("provisional")),
            ]))
        cluster.app(.pushToken, "t1", installation: "I", customID: "paul", push(tokenA))
        try await cluster.settle()
        var paul = try #require(try await cluster.profile("demo/paul"))
        let native = try #require(paul["native"])
        #expect(native["b.language"] == .string("de"))
        #expect(native["b.region"] == .string("AT"))
        #expect(native["b.timezone"] == .string("Europe/Vienna"))
        #expect(native["b.is_push_optin"] == .bool(true))
        #expect(native["b.install_date"] == .string(WireTime.format(t0 + 1)))
        #expect(native["b.last_visit_date"] == .string(WireTime.format(t0 + 2)))
        #expect(paul["installations"]?[0]?["native"]?["b.device_type"] == .string("iPhone15,2"))

        cluster.server(
            .profileUpdate, "s1", customID: "paul",
            [JSONMember("profile", .object([JSONMember("language", .string("fr")), JSONMember("region", .string("FR"))]))])
        // Turning device model collection off erases the model.
        cluster.app(
            .installation, "i2", installation: "I", customID: "paul",
            installationFields([JSONMember("data_collection", .object([JSONMember("device_model", .bool(false))]))]))
        try await cluster.settle()
        paul = try #require(try await cluster.profile("demo/paul"))
        #expect(paul["native"]?["b.language"] == .string("fr"))
        #expect(paul["native"]?["b.region"] == .string("FR"))
        #expect(paul["installations"]?[0]?["native"]?["b.device_type"] == .null)
        #expect(paul["installations"]?[0]?["data_collection"]?["device_model"] == .bool(false))

        // The consent is stored: a later write with a model and no flag (another request, an older SDK) keeps none.
        cluster.app(
            .installation, "i3", installation: "I", customID: "paul",
            installationFields([JSONMember("device_model", .string("iPhone15,2")), JSONMember("app_version", .string("2.2"))]))
        try await cluster.settle()
        paul = try #require(try await cluster.profile("demo/paul"))
        #expect(paul["installations"]?[0]?["native"]?["b.device_type"] == .null)
        #expect(paul["installations"]?[0]?["native"]?["b.app_version"] == .string("2.2"))
        // Given again, in the same write as a model (listed after it): the model is kept.
        cluster.app(
            .installation, "i4", installation: "I", customID: "paul",
            installationFields([
                JSONMember("device_model", .string("iPhone16,1")),
                JSONMember("data_collection", .object([JSONMember("device_model", .bool(true))])),
            ]))
        try await cluster.settle()
        paul = try #require(try await cluster.profile("demo/paul"))
        #expect(paul["installations"]?[0]?["native"]?["b.device_type"] == .string("iPhone16,1"))
    }

    @Test("location: an update less than 30 s after the last kept one is ignored, so is an older one", arguments: [
        (10.0, false), (29.9, false), (30.0, true), (45.0, true), (-60.0, false),
    ])
    func locationRate(after: Double, kept: Bool) async throws {
        let cluster = try Cluster()
        func location(_ latitude: String, at: Date) -> [JSONMember] {
            [JSONMember("location", .object([
                JSONMember("latitude", .number(latitude)), JSONMember("longitude", .number("2.35")),
                JSONMember("time", .string(WireTime.format(at))),
            ]))]
        }
        cluster.app(.location, "l1", installation: "I", customID: "paul", location("48.85", at: t0))
        cluster.app(.location, "l2", installation: "I", customID: "paul", location("45.76", at: t0 + after))
        try await cluster.settle()
        let stored = try await cluster.profile("demo/paul")?["location"]
        #expect(stored?["latitude"] == .number(kept ? "45.76" : "48.85"))
        #expect(stored?["at"] == .string(WireTime.format(kept ? t0 + after : t0)))
    }

    @Test("deliveries: a dead token is removed and logged, a bounce and an SMS STOP change reachability, a push sets b.last_push_date")
    func deliveries() async throws {
        let cluster = try Cluster()
        cluster.server(
            .profileUpdate, "s1", customID: "paul",
            [JSONMember("profile", .object([
                JSONMember("email", .string("paul@example.com")), JSONMember("email_marketing", .string("subscribed")),
                JSONMember("phone_number", .string("+33612345678")), JSONMember("sms_marketing", .string("subscribed")),
            ]))])
        cluster.app(.pushToken, "t1", installation: "I", customID: "paul", push(tokenA))
        try await cluster.settle()
        let at = t0 + 3600
        try cluster.delivery(DeliveryReport(id: "d1", sendID: "s-1", project: "demo", customID: "paul", installationID: "I", channel: .push, outcome: .sent, at: at))
        try cluster.delivery(DeliveryReport(id: "d2", project: "demo", customID: "paul", installationID: "I", channel: .push, outcome: .tokenInvalid, reason: "BadDeviceToken", token: tokenA, at: at))
        try cluster.delivery(DeliveryReport(id: "d3", project: "demo", customID: "paul", channel: .email, outcome: .bounced, address: "paul@example.com", at: at))
        try cluster.delivery(DeliveryReport(id: "d4", project: "demo", customID: "paul", channel: .sms, outcome: .unsubscribed, reason: "STOP", at: at))
        try cluster.delivery(DeliveryReport(id: "d5", project: "demo", customID: "nobody", channel: .sms, outcome: .unsubscribed, at: at))
        try await cluster.settle()
        let paul = try #require(try await cluster.profile("demo/paul"))
        #expect(paul["native"]?["b.last_push_date"] == .string(WireTime.format(at)))
        #expect(paul["installations"]?[0]?["push"]?["token"] == .null)
        #expect(paul["push_changelog"]?[1]?["change"] == .string("invalidated"))
        #expect(paul["push_changelog"]?[1]?["detail"] == .string("BadDeviceToken"))
        #expect(paul["email"]?["bounced_at"] == .string(WireTime.format(at)))
        #expect(paul["sms"]?["marketing"] == .string("unsubscribed"))
        let contact = try #require(cluster.contacts["demo/paul"] ?? nil)
        // No token: left out of the snapshot.
        #expect(contact["installations"]?[0]?["installation_id"] != nil && contact["installations"]?[0]?["token"] == nil)
        #expect(contact["email"]?["bounced_at"] == .string(WireTime.format(at)))
        #expect(contact["sms"]?["marketing"] == .string("unsubscribed"))
        #expect(try await cluster.profile("demo/nobody") == nil)
        // A new address clears the bounce.
        cluster.server(.profileUpdate, "s2", customID: "paul", [JSONMember("profile", .object([JSONMember("email", .string("p@example.org"))]))])
        try await cluster.settle()
        #expect(try await cluster.profile("demo/paul")?["email"]?["bounced_at"] == .null)
    }
}
