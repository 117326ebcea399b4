import Foundation
import GRDB
import HeraldTestSupport
import Shared
import Synchronization
import Testing

@testable import PartitionStore
@testable import OrchestratorDomain

/// A clock the tests move by hand: time conditions, delays and schedules are checked without sleeping.
final class TestClock: Sendable {
    private let current: Mutex<Date>
    init(_ start: Date) { current = Mutex(start) }
    var now: Date { current.withLock { $0 } }
    func set(_ date: Date) { current.withLock { $0 = date } }
}

/// A configuration from JSON objects (what `herald.config` records hold); fails the test on any issue.
func configuration(_ objects: String...) throws -> HeraldConfiguration { try configuration(objects) }

func configuration(_ objects: [String]) throws -> HeraldConfiguration {
    let nodes = try objects.map { (file: "test", node: ConfigNode(json: try JSONParser.parse(Array($0.utf8)))) }
    let (config, issues) = HeraldConfiguration.read(nodes)
    #expect(issues.isEmpty, "\(issues)")
    return config
}

let demoProject = #"{"kind":"project","id":"demo","default_language":"en"}"#

/// One partition with rules and a clock; collects what the outbox received.
final class EngagementHarness {
    let directory = temporaryDirectory()
    var database: PartitionDatabase
    let clock = TestClock(t0)
    var rules: EngagementRules
    var writer = Writer()
    var outbox: [OutboxRecord] = []

    /// With `changelog`, the database keeps one (as a service's does), from offset 0 of that topic.
    init(_ config: HeraldConfiguration, changelog: String? = nil) async throws {
        database = try PartitionDatabase.open(
            directory: directory, partition: 0, migrator: OrchestratorSchema.migrator, changelog: changelog)
        if changelog != nil { try await database.startWriting(at: 0, snapshot: false) }
        let clock = self.clock
        rules = EngagementRules(config: config, clock: { clock.now })
        try await backfill()
    }

    /// Backfills the configuration's new segments whole, as the service does when a partition opens or a
    /// configuration comes (over the empty database of a new harness, at once); returns the segments it backfilled.
    @discardableResult
    func backfill() async throws -> [String] {
        let rules = self.rules
        let pending = try await database.write { db in try SegmentBackfill(db: db, rules: rules, now: rules.clock()).reconcile() }
        for segment in pending {
            while try await !OrchestratorPartition(database).backfill(rules: rules, segment: segment).done {}
        }
        return pending
    }

    deinit { try? database.close() }

    func apply(_ records: [KafkaRecord]) async throws {
        let rules = self.rules
        outbox += try await database.applyBatch(records) { db, record in
            try OrchestratorApplier.apply(db, record: record, rules: rules)
        }
    }

    /// Moves the clock and runs the timers due then.
    @discardableResult
    func advance(to date: Date) async throws -> Int {
        clock.set(date)
        let (ran, records) = try await OrchestratorPartition(database).runTimers(rules: rules)
        outbox += records
        return ran
    }

    func reopen() throws {
        try database.close()
        database = try OrchestratorPartition.open(directory: directory, partition: 0)
    }

    func sends(_ channel: MessageChannel = .push) throws -> [SendRequest] {
        try outbox.filter { $0.topic == channel.topic.name }.map { try Wire.decode(SendRequest.self, from: $0.value ?? []) }
    }

    var deadLetters: [DeadLetter] {
        outbox.filter { $0.topic == HeraldTopic.dlq.name }.compactMap { try? Wire.decode(DeadLetter.self, from: $0.value ?? []) }
    }

    func segments(_ key: String = "demo/paul") async throws -> [String] { try await OrchestratorPartition(database).segments(of: key) }
}

@Suite("Segments in the orchestrator", .serialized)
struct SegmentMembershipTests {
    @Test("only the segments that read a changed field are evaluated again")
    func dependentSegmentsOnly() throws {
        let config = try configuration(
            demoProject,
            #"{"kind":"segment","id":"gold","project":"demo","condition":"c.plan = \"gold\""}"#,
            #"{"kind":"segment","id":"buyers","project":"demo","condition":"e.PURCHASED.count >= 2"}"#,
            #"{"kind":"segment","id":"french","project":"demo","condition":"b.language = \"fr\" or email.marketing = \"subscribed\""}"#,
            #"{"kind":"segment","id":"tagged","project":"demo","condition":"t.vip exists"}"#)
        let rules = EngagementRules(config: config)
        let cases: [(Set<ChangeKey>, [String])] = [
            ([.custom("plan")], ["demo/gold"]),
            ([.custom("age")], []),
            ([.event("PURCHASED"), .namespace(.tags)], ["demo/buyers", "demo/tagged"]),
            ([.event("OPENED")], []),
            ([.native("language")], ["demo/french"]),
            ([.namespace(.native)], ["demo/french"]),
            ([.namespace(.email)], ["demo/french"]),
            ([.namespace(.sms), .namespace(.push)], []),
            ([.everything], ["demo/buyers", "demo/french", "demo/gold", "demo/tagged"]),
        ]
        for (changes, expected) in cases {
            #expect(rules.segments(project: "demo", reading: changes).map(\.key).sorted() == expected, "\(changes)")
        }
        #expect(rules.segments(project: "other", reading: [.everything]).isEmpty)
    }

    @Test("membership follows writes: entry, exit, delete")
    func membershipFollowsWrites() async throws {
        let harness = try await EngagementHarness(
            try configuration(
                demoProject,
                #"{"kind":"segment","id":"gold","project":"demo","condition":"c.plan = \"gold\" and e.PURCHASED.price > 10"}"#))
        try await harness.apply([
            try harness.writer.update(id: "1", #"{"plan":"gold"}"#),
            try harness.writer.event(id: "2", #"{"name":"purchased","attributes":{"price":20}}"#),
        ])
        #expect(try await harness.segments() == ["demo/gold"])
        try await harness.apply([try harness.writer.event(id: "3", #"{"name":"purchased","attributes":{"price":5}}"#)])
        #expect(try await harness.segments() == [])
        try await harness.apply([try harness.writer.event(id: "4", #"{"name":"purchased","attributes":{"price":11.5}}"#)])
        #expect(try await harness.segments() == ["demo/gold"])
        try await harness.apply([harness.writer.record(.profileDelete, id: "5")])
        #expect(try await harness.segments() == [])
    }

    @Test("a time condition flips on time, from a durable timer, also after a restart")
    func timeFlip() async throws {
        let harness = try await EngagementHarness(
            try configuration(
                demoProject,
                #"{"kind":"segment","id":"carted","project":"demo","condition":"e.ADD_TO_CART.last > now - 1h"}"#,
                #"{"kind":"segment","id":"lapsed","project":"demo","condition":"e.ADD_TO_CART.last <= now - 1h"}"#))
        try await harness.apply([try harness.writer.event(id: "1", #"{"name":"add_to_cart"}"#)])
        #expect(try await harness.segments() == ["demo/carted"])
        #expect(try await harness.advance(to: t0 + 1800) == 0)
        try harness.reopen()
        // The boundary: `> now - 1h` is false and `<= now - 1h` true at exactly one hour.
        #expect(try await harness.advance(to: t0 + 3600) == 2)
        #expect(try await harness.segments() == ["demo/lapsed"])
        #expect(try await harness.advance(to: t0 + 7200) == 0)
        #expect(try await harness.segments() == ["demo/lapsed"])
    }

    @Test("a new segment is backfilled over the partition's profiles; a changed one is redone")
    func backfill() async throws {
        let harness = try await EngagementHarness(try configuration(demoProject))
        for index in 0..<25 {
            harness.writer.source = .server
            let record = harness.writer.record(
                .profileUpdate, id: "u\(index)", customID: "user\(index)",
                fields: [JSONMember("profile", .object([JSONMember("custom_attributes", .object([JSONMember("n.i", .number("\(index)"))]))]))])
            try await harness.apply([record])
        }
        let config = try configuration(
            demoProject, #"{"kind":"segment","id":"big","project":"demo","condition":"c.n >= 20"}"#)
        harness.rules = EngagementRules(config: config, clock: { t0 })
        #expect(try await OrchestratorPartition(harness.database).reconcile(rules: harness.rules) == ["demo/big"])
        var evaluated = 0
        var chunks = 0
        var done = false
        repeat {
            let chunk = try await OrchestratorPartition(harness.database).backfill(rules: harness.rules, segment: "demo/big", limit: 10)
            done = chunk.done
            evaluated += chunk.evaluated
            chunks += 1
            // Where it stands is kept with each chunk: a restart goes on from there.
            if chunks == 1 { try harness.reopen() }
        } while !done
        #expect(evaluated == 25 && chunks == 3)
        #expect(try await OrchestratorPartition(harness.database).reconcile(rules: harness.rules) == [])
        let members = try await harness.database.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM segment_members") }
        #expect(members == 5)
        // A new condition forgets the old membership and asks for a backfill.
        let changed = try configuration(
            demoProject, #"{"kind":"segment","id":"big","project":"demo","condition":"c.n >= 24"}"#)
        #expect(try await OrchestratorPartition(harness.database).reconcile(rules: EngagementRules(config: changed)) == ["demo/big"])
        let left = try await harness.database.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM segment_members") }
        #expect(left == 0)
    }
}

let pushTemplate = #"""
    {"kind":"template","id":"cart","project":"demo","channel":"push",
     "variants":{"default":{"title":"Your cart","body":"Hi {{ c.first_name | \"there\" }}, {{ event.product }} is waiting"},
                 "fr":{"title":"Votre panier","body":"Bonjour {{ c.first_name | \"toi\" }}, {{ event.product }} vous attend"}},
     "payload":{"screen":"cart"}}
    """#

@Suite("Campaigns", .serialized)
struct CampaignTests {
    func cartCampaign(_ extra: String = "") throws -> HeraldConfiguration {
        try configuration(
            demoProject, pushTemplate,
            #"{"kind":"campaign","id":"abandoned-cart","project":"demo","trigger":{"event":"ADD_TO_CART","where":"event.price >= 10"},"delay":"1h","cancel_on":["PURCHASED"],"expires_after":"2h","reeligibility":"always","messages":[{"channel":"push","template":"cart"}]\#(extra)}"#)
    }

    @Test("a push's category carries its buttons, for each app of the message that defines them")
    func categoryActions() async throws {
        let buy = #"{"SALE":{"actions":[{"id":"BUY","title":"Buy now","deeplink":"demo://buy"}]}}"#
        for (app, expected) in [
            ("", ["demo-ios": [PushAction(id: "BUY", title: "Buy now", deeplink: "demo://buy")]]),
            (#","app":"demo-android""#, [String: [PushAction]]()),
        ] {
            let harness = try await EngagementHarness(
                try configuration(
                    demoProject,
                    #"{"kind":"app","id":"demo-ios","project":"demo","platform":"ios","categories":\#(buy)}"#,
                    #"{"kind":"app","id":"demo-android","project":"demo","platform":"android"}"#,
                    #"{"kind":"template","id":"sale","project":"demo","channel":"push","variants":{"default":{"body":"Sale","category":"SALE"}}}"#,
                    #"{"kind":"campaign","id":"sale","project":"demo","type":"transactional","trigger":{"event":"OPEN"},"reeligibility":"always","messages":[{"channel":"push","template":"sale"\#(app)}]}"#))
            try await harness.apply([try harness.writer.event(id: "o", #"{"name":"open"}"#)])
            let send = try #require(try harness.sends().first)
            #expect(send.content["category"] == "SALE")
            #expect((send.actions ?? [:]) == expected, "\(app)")
        }
    }

    @Test("abandoned cart: the delay waits on a timer, a purchase cancels, the send is rendered")
    func abandonedCart() async throws {
        let harness = try await EngagementHarness(try cartCampaign())
        try await harness.apply([
            try harness.writer.update(id: "p", #"{"$language":"fr","first_name":"Paul"}"#),
            try harness.writer.event(id: "cart-1", #"{"name":"add_to_cart","attributes":{"product":"Skis","price":300}}"#),
            try harness.writer.event(id: "cheap", #"{"name":"add_to_cart","attributes":{"product":"Wax","price":5}}"#),
        ])
        #expect(try harness.sends().isEmpty)
        #expect(try await harness.advance(to: t0 + 3599) == 0)
        try harness.reopen()
        #expect(try await harness.advance(to: t0 + 3600) == 1)
        let sends = try harness.sends()
        #expect(sends.count == 1)
        let send = try #require(sends.first)
        #expect(send.content == ["title": "Votre panier", "body": "Bonjour Paul, Skis vous attend"])
        #expect(send.language == "fr")
        #expect(send.payload == ["screen": "cart"])
        #expect(send.campaign == "abandoned-cart" && send.marketing && send.profileKey == "demo/paul")
        #expect(send.trigger == SendRequest.Trigger(type: .event, eventName: "ADD_TO_CART", eventID: "cart-1", at: t0))
        #expect(send.decidedAt == t0 + 3600 && send.expiresAt == t0 + 7200)
        #expect(send.dueAt == t0 + 3600)  // the latency metric counts from here, not from the cart
        #expect(send.sendID == MessageRenderer.sendID(campaign: "demo/abandoned-cart", step: "message-0", profileKey: "demo/paul", occurrence: "event cart-1"))
        #expect(send.sendID.count == 32)

        // A second cart, then a purchase within the hour: nothing more.
        harness.clock.set(t0 + 4000)
        try await harness.apply([
            try harness.writer.event(id: "cart-2", #"{"name":"add_to_cart","attributes":{"product":"Poles","price":40}}"#, at: t0 + 4000),
            try harness.writer.event(id: "buy", #"{"name":"purchased"}"#, at: t0 + 4100),
        ])
        #expect(try await harness.advance(to: t0 + 9000) == 0)
        #expect(try harness.sends().count == 1)
    }

    @Test("a send names the revision of the contact snapshot it was decided on: each snapshot has the next one")
    func contactRevisions() async throws {
        let harness = try await EngagementHarness(try configuration(
            demoProject, pushTemplate,
            #"{"kind":"campaign","id":"now","project":"demo","trigger":{"event":"ADD_TO_CART"},"reeligibility":"always","messages":[{"channel":"push","template":"cart"}]}"#))
        func snapshots() throws -> [Int] {
            try harness.outbox.filter { $0.topic == HeraldTopic.contacts.name }.map { try Wire.decode(ContactSnapshot.self, from: $0.value ?? []).revision }
        }
        let cart = #"{"name":"add_to_cart","attributes":{"product":"Skis"}}"#
        try await harness.apply([
            try harness.writer.update(id: "1", #"{"$email_address":"paul@example.com","first_name":"Paul"}"#),
            try harness.writer.event(id: "cart-1", cart),
        ])
        try await harness.apply([
            try harness.writer.update(id: "2", #"{"first_name":"Paulo"}"#),  // no contact field: no snapshot
            try harness.writer.event(id: "cart-2", cart),
            try harness.writer.update(id: "3", #"{"$email_address":"paulo@example.com"}"#),
            try harness.writer.event(id: "cart-3", cart),
        ])
        #expect(try snapshots() == [1, 2])
        #expect(try harness.sends().map(\.contactRevision) == [1, 1, 2])
    }

    @Test("email: placeholders in HTML are escaped unless raw; a line break rendered into a header field fails the send")
    func emailInjection() async throws {
        let template = #"""
            {"kind":"template","id":"mail","project":"demo","channel":"email",
             "variants":{"default":{"subject":"Hi {{ c.first_name }}","text":"Hi {{ c.first_name }}",
                                    "html":"<p>Hi {{ c.first_name }}</p>{{ c.signature | \"\" | raw }}{{ c.missing | \"<i>a|b</i>\" }}"}}}
            """#
        let harness = try await EngagementHarness(try configuration(
            demoProject, template,
            #"{"kind":"campaign","id":"now","project":"demo","trigger":{"event":"ADD_TO_CART"},"reeligibility":"always","messages":[{"channel":"email","template":"mail"}]}"#))
        try await harness.apply([
            try harness.writer.update(id: "1", #"{"first_name":"<script>x</script>","signature":"<b>Paul</b>"}"#),
            try harness.writer.event(id: "cart-1", #"{"name":"add_to_cart"}"#),
        ])
        let send = try #require(try harness.sends(.email).first)
        #expect(send.content["html"] == "<p>Hi &lt;script&gt;x&lt;/script&gt;</p><b>Paul</b>&lt;i&gt;a|b&lt;/i&gt;")
        #expect(send.content["text"] == "Hi <script>x</script>")

        // A profile value with a line break would add a header (`Bcc:`) to the subject's line: nothing is sent.
        try await harness.apply([
            try harness.writer.update(id: "2", #"{"first_name":"Paul\r\nBcc: victim@example.com"}"#),
            try harness.writer.event(id: "cart-2", #"{"name":"add_to_cart"}"#),
        ])
        #expect(try harness.sends(.email).count == 1)
        #expect(harness.deadLetters.contains { $0.reason.contains("mail.default.subject: a line break in a header field") })
    }

    @Test("email: a campaign's tracking: false goes on its sends (the notifier then rewrites nothing); others leave it unset")
    func emailTracking() async throws {
        let harness = try await EngagementHarness(try configuration(
            demoProject,
            #"{"kind":"template","id":"mail","project":"demo","channel":"email","variants":{"default":{"subject":"Hi","text":"Hi","html":"<a href=\"https://x.example.com\">x</a>"}}}"#,
            #"{"kind":"campaign","id":"tracked","project":"demo","trigger":{"event":"ADD_TO_CART"},"reeligibility":"always","messages":[{"channel":"email","template":"mail"}]}"#,
            #"{"kind":"campaign","id":"untracked","project":"demo","trigger":{"event":"ADD_TO_CART"},"reeligibility":"always","tracking":false,"messages":[{"channel":"email","template":"mail"}]}"#))
        try await harness.apply([
            try harness.writer.update(id: "1", #"{"$email_address":"paul@example.com"}"#),
            try harness.writer.event(id: "cart-1", #"{"name":"add_to_cart"}"#),
        ])
        let sends = try harness.sends(.email)
        #expect(Dictionary(uniqueKeysWithValues: sends.map { ($0.campaign, $0.tracking) }) == ["tracked": nil, "untracked": false])
    }

    @Test("push: a line break rendered into collapse_id (the apns-collapse-id header) fails the send")
    func collapseIDInjection() async throws {
        let harness = try await EngagementHarness(try configuration(
            demoProject,
            #"{"kind":"template","id":"note","project":"demo","channel":"push","variants":{"default":{"body":"Hi","collapse_id":"cart-{{ c.first_name }}"}}}"#,
            #"{"kind":"campaign","id":"now","project":"demo","trigger":{"event":"ADD_TO_CART"},"reeligibility":"always","messages":[{"channel":"push","template":"note"}]}"#))
        try await harness.apply([
            try harness.writer.update(id: "1", #"{"first_name":"Paul"}"#),
            try harness.writer.event(id: "cart-1", #"{"name":"add_to_cart"}"#),
            try harness.writer.update(id: "2", #"{"first_name":"Paul\r\napns-priority: 10"}"#),
            try harness.writer.event(id: "cart-2", #"{"name":"add_to_cart"}"#),
        ])
        #expect(try harness.sends().map { $0.content["collapse_id"] } == ["cart-Paul"])
        #expect(harness.deadLetters.contains { $0.reason.contains("note.default.collapse_id: a line break in a header field") })
    }

    @Test("a late decision is dropped after the expiry")
    func expiry() async throws {
        let harness = try await EngagementHarness(try cartCampaign())
        try await harness.apply([try harness.writer.event(id: "c", #"{"name":"add_to_cart","attributes":{"product":"Skis","price":300}}"#)])
        // The orchestrator was down for hours: the timer runs 2h01 after the trigger.
        #expect(try await harness.advance(to: t0 + 7260) == 1)
        #expect(try harness.sends().isEmpty)
    }

    @Test("a missing value without a default fails the send visibly, and nothing half-filled is sent")
    func renderFailure() async throws {
        let harness = try await EngagementHarness(try cartCampaign())
        // A client's event id may hold any printable character, quotes included.
        try await harness.apply([try harness.writer.event(id: #"c"1\"#, #"{"name":"add_to_cart","attributes":{"price":300}}"#)])
        try await harness.advance(to: t0 + 3600)
        #expect(try harness.sends().isEmpty)
        let letter = try #require(harness.deadLetters.first)
        #expect(letter.reason.contains("no value for event.product and no default"), "\(letter.reason)")
        #expect(letter.reason.contains("abandoned-cart message-0"), "\(letter.reason)")
        // What failed, as JSON built by its type: the quote does not end the string.
        let failed = try JSONParser.parse(Array(try #require(letter.value).utf8))
        #expect(failed["occurrence"] == .string(#"event c"1\"#) && failed["campaign"] == .string("abandoned-cart"))
    }

    @Test("re-eligibility: once, at most N per period, always")
    func reeligibility() async throws {
        let cases: [(String, Int)] = [(#""once""#, 1), (#"{"max":2,"per":"1d"}"#, 2), (#""always""#, 4)]
        for (rule, expected) in cases {
            let config = try configuration(
                demoProject,
                #"{"kind":"template","id":"hello","project":"demo","channel":"email","variants":{"default":{"subject":"Hi","text":"Hello {{ b.custom_id }}"}}}"#,
                #"{"kind":"campaign","id":"welcome","project":"demo","type":"transactional","trigger":{"event":"OPENED"},"reeligibility":\#(rule),"messages":[{"channel":"email","template":"hello"}]}"#)
            let harness = try await EngagementHarness(config)
            for index in 0..<4 {
                try await harness.apply([try harness.writer.event(id: "o\(index)", #"{"name":"opened"}"#)])
            }
            let sends = try harness.sends(.email)
            #expect(sends.count == expected, "\(rule)")
            #expect(sends.first?.content == ["subject": "Hi", "text": "Hello paul"])
            #expect(sends.first?.marketing == false)
        }
    }

    @Test("a scheduled run over a large audience is paged: one page per transaction, resumed after a restart, each member once")
    func schedulePaged() async throws {
        let config = try configuration(
            demoProject,
            #"{"kind":"segment","id":"vip","project":"demo","condition":"c.vip = true"}"#,
            #"{"kind":"template","id":"news","project":"demo","channel":"sms","variants":{"default":{"text":"News"}}}"#,
            #"{"kind":"campaign","id":"weekly","project":"demo","trigger":{"schedule":{"at":"2026-11-18T12:00:00Z"}},"audience":"vip","reeligibility":"always","messages":[{"channel":"sms","template":"news"}]}"#)
        let harness = try await EngagementHarness(config)
        _ = try await OrchestratorPartition(harness.database).reconcile(rules: harness.rules)
        let members = ScheduledRuns.page * 2 + 500
        let vip = try JSONParser.parse(Array(#"{"custom_attributes":{"vip.b":true}}"#.utf8))
        try await harness.apply((0..<members).map { index in
            harness.writer.record(.profileUpdate, id: "u\(index)", customID: "u\(index)", fields: [JSONMember("profile", vip)])
        })
        #expect(try await harness.advance(to: t0 + 3200) == 1)
        #expect(try harness.sends(.sms).count == ScheduledRuns.page)
        // Stopped between pages: the next owner goes on from the last member decided.
        try harness.reopen()
        #expect(try await harness.advance(to: t0 + 3201) == 1)
        #expect(try harness.sends(.sms).count == ScheduledRuns.page * 2)
        #expect(try await harness.advance(to: t0 + 3202) == 1)
        #expect(try await harness.advance(to: t0 + 3203) == 0)
        let sends = try harness.sends(.sms)
        #expect(sends.count == members && Set(sends.map(\.profileKey)).count == members)
    }

    @Test("segment entry and exit, audience, schedule and API triggers")
    func otherTriggers() async throws {
        let config = try configuration(
            demoProject,
            #"{"kind":"segment","id":"vip","project":"demo","condition":"c.vip = true"}"#,
            #"{"kind":"template","id":"code","project":"demo","channel":"sms","variants":{"default":{"text":"Code {{ trigger.code }} for {{ c.first_name | \"you\" }}"}}}"#,
            #"{"kind":"template","id":"news","project":"demo","channel":"sms","variants":{"default":{"text":"News for {{ c.first_name | \"you\" }}"}}}"#,
            #"{"kind":"campaign","id":"welcome-vip","project":"demo","trigger":{"segment_entry":"vip"},"messages":[{"channel":"sms","template":"news"}]}"#,
            #"{"kind":"campaign","id":"vip-left","project":"demo","trigger":{"segment_exit":"vip"},"messages":[{"channel":"sms","template":"news"}]}"#,
            #"{"kind":"campaign","id":"weekly","project":"demo","trigger":{"schedule":{"at":"2026-11-18T12:00:00Z","every":"7d"}},"audience":"vip","reeligibility":"always","messages":[{"channel":"sms","template":"news"}]}"#,
            #"{"kind":"campaign","id":"otp","project":"demo","type":"transactional","trigger":{"api":true},"audience":"vip","reeligibility":"always","messages":[{"channel":"sms","template":"code"}]}"#)
        let harness = try await EngagementHarness(config)
        // Backfilled by the harness, as a partition's opening does.
        #expect(try await OrchestratorPartition(harness.database).reconcile(rules: harness.rules) == [])
        func api(_ id: String, _ customID: String, code: String) -> KafkaRecord {
            harness.writer.record(
                .campaignTrigger, id: id, customID: customID,
                fields: [JSONMember("campaign", .string("otp")), JSONMember("trigger_properties", .object([JSONMember("code", .string(code))]))])
        }
        try await harness.apply([
            try harness.writer.update(id: "1", #"{"vip":true,"first_name":"Paul"}"#),
            api("a1", "paul", code: "123"),
            harness.writer.record(.profileUpdate, id: "2", customID: "zoe", fields: [JSONMember("profile", .object([]))]),
            api("a2", "zoe", code: "456"),  // not in the audience
            api("a3", "nobody", code: "789"),  // no profile
        ])
        func texts() throws -> [String] { try harness.sends(.sms).map { "\($0.campaign): \($0.content["text"] ?? "")" } }
        #expect(try texts() == ["welcome-vip: News for Paul", "otp: Code 123 for Paul"])
        #expect(harness.deadLetters.map(\.reason) == ["no profile demo/nobody for campaign otp"])
        #expect(try harness.sends(.sms).last?.trigger.type == .api)
        // The weekly run at 12:00 (t0 is 11:06:40), and a week later; Zoe is not in the audience.
        #expect(try await harness.advance(to: t0 + 3199) == 0)
        #expect(try await harness.advance(to: t0 + 3200) == 1)
        #expect(try texts().count == 3)
        #expect(try harness.sends(.sms).last?.occurrence == "schedule 2026-11-18T12:00:00.000Z")
        #expect(try await harness.advance(to: t0 + 3200 + 7 * 86_400) == 1)
        #expect(try texts().count == 4)
        // Leaving the segment fires the exit campaign; the next weekly run has nobody to send to.
        try await harness.apply([try harness.writer.update(id: "3", #"{"vip":false}"#, at: t0 + 3200 + 7 * 86_400)])
        #expect(try texts().last == "vip-left: News for Paul")
        #expect(try await harness.advance(to: t0 + 3200 + 14 * 86_400) == 1)
        #expect(try texts().count == 5)
    }

    /// A write that puts the profile in a segment and in the audience of that segment's entry campaign: the campaign
    /// sees the audience as the write left it, whichever of the two segments comes first by name (the entries fire once
    /// the profile's segments are all evaluated; before, `a-…` entering before `b-…` was stored found no audience).
    @Test("an entry campaign sees its audience as the same write left it, whatever the segments' names", arguments: [
        ("a-entered", "b-audience"), ("b-entered", "a-audience"),
    ])
    func entryCampaignSeesItsAudience(entered: String, audience: String) async throws {
        let config = try configuration(
            demoProject,
            #"{"kind":"segment","id":"\#(entered)","project":"demo","condition":"c.plan = \"gold\""}"#,
            #"{"kind":"segment","id":"\#(audience)","project":"demo","condition":"c.country = \"fr\""}"#,
            #"{"kind":"template","id":"news","project":"demo","channel":"sms","variants":{"default":{"text":"News"}}}"#,
            #"{"kind":"campaign","id":"welcome","project":"demo","trigger":{"segment_entry":"\#(entered)"},"audience":"\#(audience)","messages":[{"channel":"sms","template":"news"}]}"#)
        let harness = try await EngagementHarness(config)
        _ = try await OrchestratorPartition(harness.database).reconcile(rules: harness.rules)
        try await harness.apply([try harness.writer.update(id: "1", #"{"plan":"gold","country":"fr"}"#)])
        #expect(try harness.sends(.sms).map(\.campaign) == ["welcome"])
    }
}
