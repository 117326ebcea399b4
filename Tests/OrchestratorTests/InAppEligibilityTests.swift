import Foundation
import GRDB
import HeraldTestSupport
import Logging
import Shared
import Testing

@testable import PartitionStore
@testable import Orchestrator
@testable import OrchestratorDomain

/// The `in_app` op's fields.
func inAppReport(_ action: String, _ message: String, button: String? = nil, at time: Date) -> [JSONMember] {
    var members = [JSONMember("action", .string(action)), JSONMember("message", .string(message))]
    if let button { members.append(JSONMember("button", .string(button))) }
    members.append(JSONMember("time", .string(WireTime.format(time))))
    return [JSONMember("in_app", .object(members))]
}

/// Which in-app messages a profile is eligible for (issue 35, items 2 to 4; braze-rules 22 and 24).
@Suite("In-app messages: eligibility", .serialized)
struct InAppEligibilityTests {
    static func config() throws -> HeraldConfiguration {
        try configuration(
            demoProject,
            #"{"kind":"segment","id":"vip","project":"demo","condition":"c.plan = \"gold\""}"#,
            #"""
            {"kind":"in_app_message","id":"sale","project":"demo","type":"modal","priority":80,"audience":"vip",
             "reeligibility":{"max":2,"per":"1d"},"triggers":[{"event":"add_to_cart","where":"event.price > 50"}],
             "buttons":[{"id":"shop","action":{"uri":"demo://shop"}}],
             "variants":{"default":{"header":"Sale","message":"For you, {{ c.first_name | default: \"friend\" }}","button.shop":"Shop"},
                         "fr":{"message":"Pour vous","button.shop":"Voir"}}}
            """#,
            #"{"kind":"in_app_message","id":"tips","project":"demo","type":"slideup","priority":10,"triggers":[{"session_start":true}],"variants":{"default":{"message":"Tip"}}}"#,
            #"{"kind":"in_app_message","id":"off","project":"demo","type":"slideup","enabled":false,"triggers":[{"session_start":true}],"variants":{"default":{"message":"Off"}}}"#,
            #"{"kind":"in_app_message","id":"later","project":"demo","type":"slideup","start":"2026-11-18T12:00:00Z","reeligibility":"always","triggers":[{"session_start":true}],"variants":{"default":{"message":"Later"}}}"#,
            #"{"kind":"in_app_message","id":"named","project":"demo","type":"slideup","reeligibility":"always","triggers":[{"session_start":true}],"variants":{"default":{"message":"Hi {{ c.nickname }}"}}}"#)
    }

    func ids(_ harness: EngagementHarness, key: String = "demo/paul", installation: String = "I") async throws -> [String]? {
        try await answer(harness, key: key, installation: installation)?.json?["messages"].map { list in
            guard case .array(let items) = list else { return [] }
            return items.compactMap { $0["id"]?.stringValue }
        }
    }

    func answer(_ harness: EngagementHarness, key: String = "demo/paul", installation: String = "I") async throws -> InAppEligibility.Answer? {
        let config = harness.rules.config
        let now = harness.clock.now
        return try await harness.database.read { db in
            try InAppEligibility(db: db, config: config, now: now).answer(key: key, installationID: installation)
        }
    }

    @Test("audience, priority, re-eligibility counted across the profile's devices, start and end, a message that cannot render")
    func eligibility() async throws {
        let harness = try await EngagementHarness(try Self.config())
        harness.writer.source = .app(id: "ios", dev: false)
        try await harness.apply([
            harness.writer.record(.identify, id: "i1", installationID: "I"), harness.writer.record(.identify, id: "i2", installationID: "J"),
        ])
        // Not in the audience of `sale`; `later` has not started (t0 is 11:06:40); `named` has no nickname to show.
        #expect(try await ids(harness) == ["tips"])
        harness.writer.source = .server
        try await harness.apply([try harness.writer.update(id: "u1", #"{"plan":"gold","first_name":"Paul"}"#)])
        // Highest priority first.
        #expect(try await ids(harness) == ["sale", "tips"])
        let sale = try #require(try await answer(harness)?.json?["messages"]?[0])
        #expect(sale["message"] == .string("For you, Paul") && sale["buttons"]?[0]?["text"] == .string("Shop"))
        #expect(sale["triggers"]?[0]?["where"] == .string("event.price > 50") && sale["triggers"]?[0]?["event"] == .string("ADD_TO_CART"))
        // Shown twice in a day, on two phones: no third time on either.
        harness.writer.source = .app(id: "ios", dev: false)
        try await harness.apply([
            harness.writer.record(.inApp, id: "r1", installationID: "I", fields: inAppReport("impression", "sale", at: t0)),
            harness.writer.record(.inApp, id: "r2", installationID: "J", fields: inAppReport("impression", "sale", at: t0 + 60)),
            harness.writer.record(.inApp, id: "r3", installationID: "J", fields: inAppReport("impression", "tips", at: t0 + 60)),
            harness.writer.record(.inApp, id: "r4", installationID: "J", fields: inAppReport("click", "sale", button: "shop", at: t0 + 61)),
        ])
        #expect(try await ids(harness, installation: "J") == [])
        #expect(try await ids(harness, installation: "I") == [])
        // Each report on herald.deliveries (channel in_app), for the campaign figures: the button's id as the action.
        let reports = try harness.outbox.filter { $0.topic == HeraldTopic.deliveries.name }.map {
            try Wire.decode(DeliveryReport.self, from: $0.value ?? [])
        }
        #expect(reports.map(\.outcome) == [.viewed, .viewed, .viewed, .clicked])
        #expect(reports.map(\.campaign) == ["sale", "sale", "tips", "sale"] && reports.map(\.installationID) == ["I", "J", "J", "J"])
        #expect(reports.allSatisfy { $0.channel == .inApp && $0.key == "demo/paul" && $0.sendID == nil })
        #expect(reports.last?.action == "shop" && reports.last?.at == t0 + 61)
        #expect(Set(reports.map(\.id)).count == 4)
        // A day after the first impression, one more is allowed; `later` has started; `tips` was shown once, for good.
        harness.clock.set(t0 + 86_400 + 1)
        #expect(try await ids(harness) == ["sale", "later"])
        // The segment left: gone at once.
        harness.writer.source = .server
        try await harness.apply([try harness.writer.update(id: "u2", #"{"plan":"free"}"#, at: t0 + 86_401)])
        #expect(try await ids(harness) == ["later"])
        // A nickname: `named` renders now.
        try await harness.apply([try harness.writer.update(id: "u3", #"{"nickname":"P"}"#, at: t0 + 86_402)])
        #expect(try await ids(harness) == ["later", "named"])
    }

    @Test("a message that cannot render is logged once a minute per message, not at every sync")
    func renderWarnings() {
        let logger = Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })
        let key = "demo/warn-\(UUID().uuidString)"
        #expect(RenderWarnings.warn(logger, key: key, "x", metadata: [:]))
        #expect(!RenderWarnings.warn(logger, key: key, "x", metadata: [:]))
        #expect(RenderWarnings.warn(logger, key: key + "-other", "x", metadata: [:]))
    }

    @Test("the answer holds at most 5 s, less when a message starts or ends sooner, and its tag says which")
    func validity() async throws {
        let harness = try await EngagementHarness(try Self.config())
        harness.writer.source = .app(id: "ios", dev: false)
        try await harness.apply([harness.writer.record(.identify, id: "i1", installationID: "I")])
        let first = try #require(try await answer(harness))
        #expect(first.json?["valid_until"] == .string(WireTime.format(t0 + 5)))
        harness.clock.set(WireTime.parse("2026-11-18T11:59:58Z")!)
        let second = try #require(try await answer(harness))
        #expect(second.json?["valid_until"] == .string("2026-11-18T12:00:00.000Z"))
        // The same messages, but the app's answer says it holds for 5 s: a new tag, so that the app learns the shorter
        // validity; within that window, the tag stays.
        #expect(second.etag != first.etag)
        harness.clock.set(WireTime.parse("2026-11-18T11:59:59Z")!)
        #expect(try #require(try await answer(harness)).etag == second.etag)
        harness.clock.set(WireTime.parse("2026-11-18T12:00:00Z")!)
        #expect(try #require(try await answer(harness)).etag != first.etag)
    }

    /// The 8 sequences of three identifies and logouts of one installation (each step an identify as paul, then as
    /// zoe, or a logout, by the bits of `order`), its moves between partitions delivered in a seeded order: after each
    /// step, only the profile that holds the installation answers, and its answer names it.
    @Test("after an identify or a logout, no message computed for another profile", arguments: Array(0..<8))
    func identity(order: Int) async throws {
        let cluster = try Cluster(seed: UInt64(order) + 1)
        let config = try Self.config()
        cluster.rules = EngagementRules(config: config, clock: { t0 })
        // The partitions keep their answers' tags, as the service's do: a revalidation is answered from one only while
        // nothing of its profile changed.
        for database in cluster.databases { try await database.keepReadTags(owners: OrchestratorSchema.rowOwners, capacity: 100) }
        var tags: [String: String] = [:]
        cluster.app(.session, "s", installation: "I", session("start", "s1", at: t0))
        try await cluster.settle()
        var holder: String?
        for step in 0..<3 {
            if order & (1 << step) != 0 {
                let user = step % 2 == 0 ? "paul" : "zoe"
                cluster.app(.identify, "i\(step)", installation: "I", customID: user)
                // A device another user holds stays theirs until they log it out.
                if holder == nil { holder = user }
            } else {
                cluster.app(.logout, "o\(step)", installation: "I", [JSONMember("from_custom_id", holder.map(JSONValue.string) ?? .null)])
                holder = nil
            }
            try await cluster.settle()
            for (key, custom) in [("demo/install/I", nil), ("demo/paul", "paul"), ("demo/zoe", "zoe")] as [(String, String?)] {
                let answer = try await cluster.databases[cluster.partition(of: key)].read { db in
                    try InAppEligibility(db: db, config: config, now: t0).answer(key: key, installationID: "I")
                }
                #expect((answer != nil) == (custom == holder), "step \(step): \(key)")
                if let answer { #expect(answer.json?["profile"]?["custom_id"] == custom.map(JSONValue.string) ?? .null) }
                // The app of each profile revalidates with the tag of its last answer.
                let database = cluster.databases[cluster.partition(of: key)]
                switch try await OrchestratorPartitions.inAppAnswer(
                    database, tags: database.readTags, rules: cluster.rules, key: key, installationID: "I", after: nil, ifNoneMatch: tags[key], now: t0)
                {
                case .answer(let synced):
                    #expect(custom == holder && synced.etag == answer?.etag, "step \(step): \(key) revalidated")
                    tags[key] = synced.etag
                case .notHeld: #expect(custom != holder, "step \(step): \(key) revalidated")
                default: Issue.record("step \(step): \(key) not answered")
                }
            }
        }
    }

    @Test("retention: impressions go when no re-eligibility reads them, once messages keep theirs; push receipts after 30 days")
    func retention() async throws {
        let harness = try await EngagementHarness(try Self.config())
        harness.writer.source = .app(id: "ios", dev: false)
        try await harness.apply([
            harness.writer.record(.identify, id: "i1", installationID: "I"),
            harness.writer.record(.inApp, id: "r1", installationID: "I", fields: inAppReport("impression", "sale", at: t0)),
            harness.writer.record(.inApp, id: "r2", installationID: "I", fields: inAppReport("impression", "tips", at: t0)),
            harness.writer.record(.inApp, id: "r3", installationID: "I", fields: inAppReport("impression", "later", at: t0)),
        ])
        try await AppActivityTests.delivered(harness, send: "S", installation: "I")
        func rows(_ table: String) async throws -> Int? {
            try await harness.database.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM \(table)") }
        }
        #expect(try await rows("in_app_impressions") == 3)
        // Within `sale`'s day and the dedupe window: all kept.
        #expect(try await OrchestratorRetention.pruneInAppImpressions(harness.database, rules: harness.rules, now: t0 + 3000, dedupeWindow: 3600) == 0)
        // Past them: `sale` (1 day) and `later` (always: the dedupe window) go; `tips` (once) stays.
        #expect(try await OrchestratorRetention.pruneInAppImpressions(harness.database, rules: harness.rules, now: t0 + 86_401, dedupeWindow: 3600) == 2)
        #expect(try await rows("in_app_impressions") == 1)
        #expect(try await OrchestratorRetention.prunePushReceipts(harness.database, now: t0 + 30 * 86_400 - 1) == 0)
        #expect(try await OrchestratorRetention.prunePushReceipts(harness.database, now: t0 + 30 * 86_400 + 1) == 1)
    }

    /// A public key once stored 400 impressions of one message for a made-up installation and showed them on the
    /// status board. What one installation reports counts only as a real app could make it: an impression per the
    /// message's minimum trigger interval (`tips`: 30 s), one click and one dismissal per impression it reported, and
    /// a profile keeps the newest 1,000 impressions of a message.
    @Test("one installation's reports count only as showing the message could make them")
    func boundedReports() async throws {
        let config = try configuration(
            demoProject,
            #"{"kind":"in_app_message","id":"tips","project":"demo","type":"slideup","triggers":[{"session_start":true}],"variants":{"default":{"message":"Tip"}}}"#,
            #"{"kind":"in_app_message","id":"burst","project":"demo","type":"slideup","min_trigger_interval":"0s","reeligibility":"always","triggers":[{"session_start":true}],"variants":{"default":{"message":"B"}}}"#)
        let harness = try await EngagementHarness(config)
        harness.writer.source = .app(id: "ios", dev: false)
        var records = [harness.writer.record(.identify, id: "i1", installationID: "I")]
        // 120 impressions a second apart: the ones 30 s apart count (t0, +30, +60, +90).
        for second in 0..<120 {
            records.append(harness.writer.record(.inApp, id: "v\(second)", installationID: "I", fields: inAppReport("impression", "tips", at: t0 + Double(second))))
        }
        // Six clicks and a dismissal: a click per impression; the dismissal from a device that showed nothing.
        for index in 0..<6 {
            records.append(harness.writer.record(.inApp, id: "c\(index)", installationID: "I", fields: inAppReport("click", "tips", at: t0 + 200)))
        }
        records.append(harness.writer.record(.inApp, id: "d1", installationID: "J", fields: inAppReport("dismiss", "tips", at: t0 + 200)))
        try await harness.apply(records)
        let reports = try harness.outbox.filter { $0.topic == HeraldTopic.deliveries.name }.map {
            try Wire.decode(DeliveryReport.self, from: $0.value ?? [])
        }
        #expect(reports.filter { $0.outcome == .viewed }.map(\.at) == [t0, t0 + 30, t0 + 60, t0 + 90])
        #expect(reports.filter { $0.outcome == .clicked }.count == 4)
        #expect(reports.filter { $0.outcome == .dismissed }.isEmpty)
        func kept(_ message: String) async throws -> Int? {
            try await harness.database.read { db in
                try Int.fetchOne(db, sql: "SELECT count(*) FROM in_app_impressions WHERE message_key = ?", arguments: ["demo/\(message)"])
            }
        }
        #expect(try await kept("tips") == 4)
        // Without an interval, a second apart still: the newest 1,000 are kept.
        let burst = (0..<1_050).map { second in
            harness.writer.record(.inApp, id: "b\(second)", installationID: "I", fields: inAppReport("impression", "burst", at: t0 + Double(second)))
        }
        try await harness.apply(burst)
        #expect(try await kept("burst") == 1_000)
        let oldest = try await harness.database.read { db in
            try String.fetchOne(db, sql: "SELECT min(at) FROM in_app_impressions WHERE message_key = 'demo/burst'")
        }
        #expect(oldest == WireTime.format(t0 + 50))
    }

    /// A profile value rendered into an image's URL: `javascript:` once passed wherever a URI with a scheme did.
    @Test("an image URL rendered from a profile value is one an app may load, or the message is left out")
    func renderedLinks() async throws {
        let config = try configuration(
            demoProject,
            #"{"kind":"in_app_message","id":"pic","project":"demo","type":"slideup","reeligibility":"always","triggers":[{"session_start":true}],"variants":{"default":{"message":"M","image_url":"{{ c.pic }}"}}}"#)
        let harness = try await EngagementHarness(config)
        harness.writer.source = .app(id: "ios", dev: false)
        try await harness.apply([harness.writer.record(.identify, id: "i1", installationID: "I")])
        harness.writer.source = .server
        for (index, (value, shown)) in [("https://x.example/p.png", true), ("javascript://x/%0Aalert(1)", false), ("DATA:text/html,x", false)]
            .enumerated()
        {
            try await harness.apply([try harness.writer.update(id: "u\(index)", #"{"pic":"\#(value)"}"#, at: t0 + Double(index))])
            #expect(try await ids(harness) == (shown ? ["pic"] : []), "\(value)")
        }
    }

    @Test("reports of a message or a button the project does not have count nowhere")
    func unknownReports() async throws {
        let harness = try await EngagementHarness(try Self.config())
        harness.writer.source = .app(id: "ios", dev: false)
        try await harness.apply([
            harness.writer.record(.identify, id: "i1", installationID: "I"),
            harness.writer.record(.inApp, id: "r1", installationID: "I", fields: inAppReport("impression", "nope", at: t0)),
            harness.writer.record(.inApp, id: "r2", installationID: "I", fields: inAppReport("click", "tips", button: "nope", at: t0)),
        ])
        #expect(try await harness.database.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM in_app_impressions") } == 0)
        #expect(try await ids(harness) == ["tips"])
        #expect(harness.outbox.filter { $0.topic == HeraldTopic.deliveries.name }.isEmpty)
    }
}
