import Foundation
import GRDB
import HeraldTestSupport
import Ingest
import Shared
import Testing

@testable import PartitionStore
@testable import OrchestratorDomain

/// The `content_card` op's fields.
func cardReport(_ action: String, _ card: String, at time: Date = t0) -> [JSONMember] {
    [JSONMember("content_card", .object([
        JSONMember("action", .string(action)), JSONMember("card", .string(card)), JSONMember("time", .string(WireTime.format(time))),
    ]))]
}

/// Content cards (issue 35, item 5; braze-rules 25): delivery by a campaign, the feed's cursor sync, the state shared
/// by the profile's devices, the cap, expiry, edits in place and the 2 KB limit.
@Suite("Content cards", .serialized)
struct ContentCardTests {
    static let welcome = #"""
        {"kind":"content_card","id":"welcome","project":"demo","type":"classic","categories":["news"],"expires_after":"7d",
         "extras":{"kind":"promo"},
         "variants":{"default":{"title":"Hello {{ c.first_name | default: \"there\" }}","description":"Your {{ event.item }} is waiting",
                                "url":"https://shop.example/cart"}}}
        """#
    static let banner = #"{"kind":"content_card","id":"banner","project":"demo","type":"banner","pinned":true,"dismissible":false,"variants":{"default":{"image_url":"https://cdn.example/b.png"}}}"#
    static let note = #"{"kind":"content_card","id":"note","project":"demo","type":"text_announcement","variants":{"default":{"description":"Note for {{ c.nickname }}"}}}"#
    static let campaign = #"{"kind":"campaign","id":"cart","project":"demo","trigger":{"event":"add_to_cart"},"reeligibility":"always","cards":["welcome"]}"#

    static func config(_ extra: String...) throws -> HeraldConfiguration {
        try configuration([demoProject, welcome, banner, note, campaign] + extra)
    }

    /// Two installations of paul's, his name, and an event that delivers `welcome`.
    func deliveredHarness(_ config: HeraldConfiguration? = nil) async throws -> EngagementHarness {
        let harness = try await EngagementHarness(try config ?? Self.config())
        harness.writer.source = .app(id: "ios", dev: false)
        try await harness.apply([
            harness.writer.record(.identify, id: "i1", installationID: "I"), harness.writer.record(.identify, id: "i2", installationID: "J"),
        ])
        harness.writer.source = .server
        try await harness.apply([
            try harness.writer.update(id: "u1", #"{"first_name":"Paul"}"#),
            try harness.writer.event(id: "e1", #"{"name":"add_to_cart","attributes":{"item":"ski"}}"#),
        ])
        return harness
    }

    func feed(
        _ harness: EngagementHarness, since cursor: String? = nil, key: String = "demo/paul", installation: String = "I"
    ) async throws -> JSONValue? {
        let config = harness.rules.config
        let now = harness.clock.now
        let since = cursor.flatMap(ContentCardFeed.Cursor.init)
        return try await harness.database.read { db in
            try ContentCardFeed(db: db, config: config, now: now).answer(key: key, installationID: installation, since: since)
        }
    }

    func ids(_ answer: JSONValue?, _ field: String = "cards") -> [String] {
        guard case .array(let items)? = answer?[field] else { return [] }
        return items.compactMap { $0["id"]?.stringValue ?? $0.stringValue }
    }

    @Test("a campaign delivers a card rendered with the profile and the event; a replay delivers nothing more")
    func delivery() async throws {
        let harness = try await deliveredHarness()
        let answer = try #require(try await feed(harness))
        #expect(answer["full"] == .bool(true))
        let card = try #require(answer["cards"]?[0])
        #expect(card["title"] == .string("Hello Paul") && card["description"] == .string("Your ski is waiting"))
        #expect(card["domain"] == .string("shop.example") && card["categories"] == .array([.string("news")]))
        #expect(card["extras"]?["kind"] == .string("promo") && card["viewed"] == .bool(false))
        #expect(card["expires_at"] == .string(WireTime.format(t0 + 7 * 86_400)))
        #expect(try ids(answer).count == 1 && harness.deadLetters.isEmpty && harness.sends().isEmpty)
        // The same event again (a replay): the same card, not a second.
        harness.writer.offset = 3
        try await harness.apply([try harness.writer.event(id: "e1", #"{"name":"add_to_cart","attributes":{"item":"ski"}}"#)])
        #expect(ids(try await feed(harness)).count == 1)
        // Another event: another card, newest first.
        try await harness.apply([try harness.writer.event(id: "e2", #"{"name":"add_to_cart","attributes":{"item":"boots"}}"#, at: t0 + 1)])
        harness.clock.set(t0 + 2)
        let two = try #require(try await feed(harness))
        #expect(ids(two).count == 2 && two["cards"]?[0]?["description"] == .string("Your boots is waiting"))
        // Another profile's feed, or an installation this profile does not hold: nothing of paul's.
        #expect(try await feed(harness, installation: "K") == nil)
        #expect(try await feed(harness, key: "demo/zoe") == nil)
    }

    @Test("the cursor: an empty answer is tiny, a view or a dismissal on one device reaches the other, expired cards go")
    func cursor() async throws {
        let harness = try await deliveredHarness()
        let first = try #require(try await feed(harness))
        let cursor = try #require(first["cursor"]?.stringValue)
        let id = try #require(ids(first).first)
        // Nothing changed: a few bytes, whatever the feed holds.
        let empty = try #require(try await feed(harness, since: cursor))
        #expect(empty["full"] == .bool(false) && ids(empty).isEmpty && ids(empty, "removed").isEmpty)
        #expect(empty.serialized.count < 80)
        // Viewed on J: I's next sync has it, viewed; a second view counts nothing more.
        harness.writer.source = .app(id: "ios", dev: false)
        try await harness.apply([
            harness.writer.record(.contentCard, id: "v1", installationID: "J", fields: cardReport("view", id)),
            harness.writer.record(.contentCard, id: "v2", installationID: "I", at: t0 + 5, fields: cardReport("view", id)),
        ])
        // Rule 25: viewed once per user, across devices (the first view is the one).
        let viewedAt = try await harness.database.read { db in try String.fetchOne(db, sql: "SELECT viewed_at FROM content_cards") }
        #expect(viewedAt == WireTime.format(t0))
        let viewed = try #require(try await feed(harness, since: cursor, installation: "I"))
        #expect(ids(viewed) == [id] && viewed["cards"]?[0]?["viewed"] == .bool(true))
        let afterView = try #require(viewed["cursor"]?.stringValue)
        // Dismissed on J: removed on I, and gone from a whole sync.
        try await harness.apply([harness.writer.record(.contentCard, id: "d1", installationID: "J", fields: cardReport("dismiss", id))])
        let dismissed = try #require(try await feed(harness, since: afterView))
        #expect(ids(dismissed).isEmpty && ids(dismissed, "removed") == [id])
        #expect(ids(try await feed(harness)).isEmpty)
        // A card of a later event expires after its 7 days: not returned, though its row (its "received" record) stays.
        harness.writer.source = .server
        try await harness.apply([try harness.writer.event(id: "e2", #"{"name":"add_to_cart","attributes":{"item":"boots"}}"#, at: t0 + 10)])
        harness.clock.set(t0 + 10)
        #expect(ids(try await feed(harness)).count == 1)
        harness.clock.set(t0 + 10 + 7 * 86_400)
        #expect(ids(try await feed(harness)).isEmpty)
        let rows = try await harness.database.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM content_cards") }
        #expect(rows == 2)
        // 30 days past the expiry, the rows go.
        let pruned = try await OrchestratorRetention.pruneContentCards(harness.database, now: t0 + 38 * 86_400)
        #expect(pruned == 2)
    }

    @Test("a click counts only on a card with a URL, a dismissal only on a dismissible card; unknown cards count nowhere")
    func reports() async throws {
        let config = try Self.config(
            #"{"kind":"campaign","id":"promo","project":"demo","trigger":{"event":"promo"},"cards":["banner"]}"#)
        let harness = try await deliveredHarness(config)
        try await harness.apply([try harness.writer.event(id: "e2", #"{"name":"promo"}"#)])
        let answer = try #require(try await feed(harness))
        // Pinned first.
        let banner = try #require(answer["cards"]?[0]?["id"]?.stringValue)
        let welcome = try #require(answer["cards"]?[1]?["id"]?.stringValue)
        #expect(answer["cards"]?[0]?["type"] == .string("banner"))
        harness.writer.source = .app(id: "ios", dev: false)
        try await harness.apply([
            harness.writer.record(.contentCard, id: "c1", installationID: "I", fields: cardReport("click", banner)),
            harness.writer.record(.contentCard, id: "c2", installationID: "I", fields: cardReport("dismiss", banner)),
            harness.writer.record(.contentCard, id: "c3", installationID: "I", fields: cardReport("click", welcome)),
            harness.writer.record(.contentCard, id: "c4", installationID: "I", fields: cardReport("click", String(repeating: "a", count: 32))),
        ])
        let after = try #require(try await feed(harness))
        #expect(ids(after) == [banner, welcome])
        #expect(after["cards"]?[0]?["clicked"] == .bool(false) && after["cards"]?[1]?["clicked"] == .bool(true))
        // What counted is on herald.deliveries (channel content_card), once: the welcome card's click; a second click
        // of it counts nowhere.
        try await harness.apply([harness.writer.record(.contentCard, id: "c5", installationID: "J", fields: cardReport("click", welcome))])
        let reports = try harness.outbox.filter { $0.topic == HeraldTopic.deliveries.name }.map {
            try Wire.decode(DeliveryReport.self, from: $0.value ?? [])
        }
        #expect(reports.map(\.outcome) == [.clicked] && reports.first?.channel == .contentCard, "\(reports)")
        #expect(reports.first?.sendID == welcome && reports.first?.campaign == "cart" && reports.first?.key == "demo/paul")
        #expect(reports.first?.installationID == "I")
    }

    /// Issue 60, item 4: a card's action that writes to the profile (batch-rules §8.4).
    @Test("a card's action: at the counted click its writes are emitted, once, and applied they tag the profile and log the event")
    func actionWrites() async throws {
        let card = #"{"kind":"content_card","id":"guide","project":"demo","type":"classic","action":{"id":"batch.group","args":{"actions":[["batch.user.tag",{"a":"add","c":"interests","t":"ski"}],["batch.user.event",{"e":"guide_opened","l":"winter"}]]}},"variants":{"default":{"title":"Guide","description":"Read it"}}}"#
        let config = try Self.config(card, #"{"kind":"campaign","id":"guides","project":"demo","trigger":{"event":"promo"},"cards":["guide"]}"#)
        let harness = try await deliveredHarness(config)
        try await harness.apply([try harness.writer.event(id: "e2", #"{"name":"promo"}"#)])
        let answer = try #require(try await feed(harness))
        guard case .array(let cards)? = answer["cards"], let guide = cards.first(where: { $0["title"] == .string("Guide") }),
            let id = guide["id"]?.stringValue
        else { Issue.record("no guide card: \(answer)"); return }
        #expect(guide["action"]?["id"] == .string("batch.group"))
        harness.writer.source = .app(id: "ios", dev: false)
        let before = harness.outbox.count
        try await harness.apply([
            harness.writer.record(.contentCard, id: "c1", installationID: "I", fields: cardReport("click", id)),
            harness.writer.record(.contentCard, id: "c2", installationID: "J", fields: cardReport("click", id)),
        ])
        let emitted = harness.outbox.dropFirst(before).filter { $0.topic == HeraldTopic.ingest.name }
        #expect(emitted.count == 2, "one click counted: its two writes, once")
        // Applied as the partition applies what its outbox produced to herald.ingest.
        try await harness.apply(emitted.enumerated().map { index, record in
            KafkaRecord(topic: HeraldTopic.ingest.name, partition: 0, offset: 10_000 + Int64(index), key: Array(record.key.utf8), value: record.value, headers: record.headers)
        })
        let profile = try #require(try await harness.database.read { db in try ProfileView.json(db, key: "demo/paul") })
        #expect(profile["custom"]?["c.interests"] == .array([.string("ski")]), "\(harness.deadLetters.map(\.reason))")
        #expect(profile["events"]?["e.GUIDE_OPENED"]?["label"] == .string("winter"), "\(harness.deadLetters.map(\.reason))")
    }

    @Test("the cap counts live cards only: a full feed delivers nothing more until a card is dismissed or expires")
    func cap() async throws {
        let project = #"{"kind":"project","id":"demo","default_language":"en","max_content_cards":2}"#
        let harness = try await EngagementHarness(try configuration(project, Self.welcome, Self.banner, Self.note, Self.campaign))
        harness.writer.source = .app(id: "ios", dev: false)
        try await harness.apply([harness.writer.record(.identify, id: "i1", installationID: "I")])
        harness.writer.source = .server
        for index in 1...3 {
            try await harness.apply([try harness.writer.event(id: "e\(index)", #"{"name":"add_to_cart","attributes":{"item":"x"}}"#, at: t0 + Double(index))])
        }
        harness.clock.set(t0 + 5)
        let full = try #require(try await feed(harness))
        #expect(ids(full).count == 2)
        harness.writer.source = .app(id: "ios", dev: false)
        try await harness.apply([harness.writer.record(.contentCard, id: "d1", installationID: "I", fields: cardReport("dismiss", ids(full)[0]))])
        harness.writer.source = .server
        try await harness.apply([try harness.writer.event(id: "e4", #"{"name":"add_to_cart","attributes":{"item":"x"}}"#, at: t0 + 6)])
        harness.clock.set(t0 + 7)
        #expect(ids(try await feed(harness)).count == 2)
        let rows = try await harness.database.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM content_cards") }
        #expect(rows == 3)
    }

    @Test("an edit of a live card updates the delivered cards under the same ids; the next sync is whole")
    func editInPlace() async throws {
        let harness = try await deliveredHarness()
        let before = try #require(try await feed(harness))
        let id = try #require(ids(before).first)
        let cursor = try #require(before["cursor"]?.stringValue)
        let edited = Self.welcome.replacingOccurrences(of: "Hello {{", with: "Welcome back {{")
        harness.rules = EngagementRules(config: try configuration(demoProject, edited, Self.banner, Self.note, Self.campaign), clock: { t0 })
        let after = try #require(try await feed(harness, since: cursor))
        #expect(after["full"] == .bool(true) && ids(after) == [id])
        #expect(after["cards"]?[0]?["title"] == .string("Welcome back Paul"))
        #expect(after["cards"]?[0]?["description"] == .string("Your ski is waiting"))
        // The card's definition removed: gone from the feed.
        harness.rules = EngagementRules(config: try configuration(demoProject, Self.banner, Self.note), clock: { t0 })
        #expect(ids(try await feed(harness, since: after["cursor"]?.stringValue)).isEmpty)
    }

    @Test("a card that cannot render whole, or is over 2 KB rendered, is not delivered: a dead letter says why; nor an expired one")
    func neverHalfRendered() async throws {
        let config = try Self.config(
            #"{"kind":"campaign","id":"noted","project":"demo","trigger":{"event":"noted"},"cards":["note"]}"#,
            #"{"kind":"content_card","id":"big","project":"demo","type":"text_announcement","variants":{"default":{"description":"\#(String(repeating: "y", count: 1600)){{ c.bio }}"}}}"#,
            #"{"kind":"campaign","id":"bio","project":"demo","trigger":{"event":"bio"},"cards":["big"]}"#,
            #"{"kind":"content_card","id":"past","project":"demo","type":"text_announcement","expires_at":"2020-01-01T00:00:00Z","variants":{"default":{"description":"Old"}}}"#,
            #"{"kind":"campaign","id":"old","project":"demo","trigger":{"event":"old"},"cards":["past"]}"#)
        let harness = try await deliveredHarness(config)
        try await harness.apply([
            try harness.writer.update(id: "u2", #"{"bio":"\#(String(repeating: "x", count: 250))"}"#),
            try harness.writer.event(id: "e2", #"{"name":"noted"}"#), try harness.writer.event(id: "e3", #"{"name":"bio"}"#),
            // A card past its expires_at: nowhere to show, not delivered, no dead letter either.
            try harness.writer.event(id: "e4", #"{"name":"old"}"#),
        ])
        #expect(ids(try await feed(harness)).count == 1)
        let reasons = harness.deadLetters.map(\.reason)
        #expect(reasons.count == 2)
        #expect(reasons.contains { $0.contains("note") && $0.contains("nickname") })
        #expect(reasons.contains { $0.contains("bytes rendered; at most 2048") })
    }
}

/// Cards and identity (braze-rules §1.2: the anonymous history merges once, into a new user only): what an anonymous
/// installation received is its user's once it identifies for the first time, with its views and dismissals.
@Suite("Content cards: identify")
struct ContentCardIdentityTests {
    func cluster(seed: UInt64) throws -> Cluster {
        let cluster = try Cluster(seed: seed)
        cluster.rules = EngagementRules(config: try ContentCardTests.config(), clock: { t0 + 3_600 })
        return cluster
    }

    func feed(_ cluster: Cluster, _ key: String, installation: String = "A") async throws -> JSONValue? {
        let config = cluster.rules.config
        return try await cluster.databases[cluster.partition(of: key)].read { db in
            try ContentCardFeed(db: db, config: config, now: t0 + 3_600).answer(key: key, installationID: installation, since: nil)
        }
    }

    func cards(_ answer: JSONValue?) -> [JSONValue] {
        guard case .array(let items)? = answer?["cards"] else { return [] }
        return items
    }

    @Test("an anonymous user's cards follow their first identify, viewed as they were; not into a user who had a profile", arguments: [1, 2, 3] as [UInt64])
    func followIdentify(seed: UInt64) async throws {
        for existing in [false, true] {
            let cluster = try cluster(seed: seed)
            if existing { cluster.server(.profileUpdate, "s1", customID: "anna", attribute("plan", "gold")) }
            let event = #"{"name":"add_to_cart","attributes":{"item":"ski"}}"#
            guard case .valid(let validated) = EventValidation.validate(try JSONParser.parse(Array(event.utf8)), path: "e") else {
                Issue.record("invalid event")
                return
            }
            cluster.app(.event, "e1", installation: "A", [JSONMember("event", validated.json)])
            try await cluster.settle()
            let anonymous = cards(try await feed(cluster, "demo/install/A"))
            #expect(anonymous.count == 1, "\(anonymous)")
            let card = try #require(anonymous.first?["id"]?.stringValue)
            cluster.app(.contentCard, "v1", installation: "A", cardReport("view", card))
            cluster.app(.identify, "id1", installation: "A", customID: "anna")
            try await cluster.settle()
            let hers = cards(try await feed(cluster, "demo/anna"))
            if existing {
                #expect(hers.isEmpty, "\(hers)")
            } else {
                #expect(hers.map { $0["id"]?.stringValue } == [card], "\(hers)")
                #expect(hers.first?["viewed"] == .bool(true) && hers.first?["description"] == .string("Your ski is waiting"))
            }
            #expect(cluster.deadLetters.isEmpty, "\(cluster.deadLetters)")
        }
    }
}
