import Foundation
import GRDB
import PartitionStore
import Shared
import Testing

@testable import OrchestratorDomain

/// Journeys walked in one partition (docs/journeys.md): entries, waits keyed to the entry event, timeouts, splits, exit
/// rules, re-entry, versions, and one send per (journey, version, entry, node).
@Suite("Journeys", .serialized)
struct JourneyTests {
    static let templates = ["hello", "thanks", "remind", "vip"].map { id in
        #"{"kind":"template","id":"\#(id)","project":"demo","channel":"push","variants":{"default":{"body":"\#(id) {{entry.cart_id | default: 'none'}}"}}}"#
    }

    /// Sign-up → hello; wait up to 2 days for a purchase of the same cart (→ thanks); else VIPs get `vip`, the others
    /// `remind`. An unsubscribe takes the profile out.
    static func welcome(
        remind: String = "remind", reentry: String = "\"never\"", wait: String = "wait-buy", timeout: String = "2d", migrate: String = ""
    ) -> String {
        #"""
        {"kind":"journey","id":"welcome","project":"demo","entry":{"event":"signed_up"},"reentry":\#(reentry),
         "exit":[{"event":"unsubscribed"}],"start":"hello"\#(migrate),
         "nodes":{
           "hello":{"message":{"channel":"push","template":"hello"},"next":"\#(wait)"},
           "\#(wait)":{"wait":{"branches":[{"event":"purchased","where":"event.cart_id = entry.cart_id","next":"thanks"}],
                               "timeout":{"after":"\#(timeout)","next":"vip-check"}}},
           "vip-check":{"split":{"branches":[{"condition":"c.vip = true","next":"vip"}],"else":"remind"}},
           "vip":{"message":{"channel":"push","template":"vip"},"next":"done"},
           "remind":{"message":{"channel":"push","template":"\#(remind)"},"next":"done"},
           "thanks":{"message":{"channel":"push","template":"thanks"},"next":"done"},
           "done":{"exit":{}}}}
        """#
    }

    static func harness(_ journey: String = welcome()) async throws -> EngagementHarness {
        try await EngagementHarness(try configuration([demoProject] + templates + [journey]))
    }

    func bodies(_ harness: EngagementHarness) throws -> [String] { try harness.sends().map { $0.content["body"] ?? "" } }

    func instances(_ harness: EngagementHarness) async throws -> [String] {
        try await harness.database.read { db in
            try Row.fetchAll(db, sql: "SELECT profile_key, entry_id, coalesce(node, ended) AS at FROM journey_instances ORDER BY profile_key, entered_at, entry_id")
                .map { "\($0["profile_key"] as String) \($0["at"] as String)" }
        }
    }

    func timers(_ harness: EngagementHarness) async throws -> [String] {
        try await harness.database.read { db in
            try Row.fetchAll(db, sql: "SELECT ref, due_at FROM timers WHERE kind = 'journey' ORDER BY ref").map { "\($0[0] as String) \($0[1] as String)" }
        }
    }

    @Test("a wait keyed to the entry event: another cart's purchase does not move it, that cart's does")
    func waitForThatCart() async throws {
        let harness = try await Self.harness()
        try await harness.apply([
            try harness.writer.event(id: "s1", #"{"name":"signed_up","attributes":{"cart_id":"c1"}}"#),
            try harness.writer.event(id: "other", #"{"name":"purchased","attributes":{"cart_id":"c2"}}"#, at: t0 + 60),
        ])
        #expect(try bodies(harness) == ["hello c1"])
        #expect(try await instances(harness) == ["demo/paul wait-buy"])
        #expect(try await timers(harness) == ["demo/welcome wait-buy event s1 \(WireTime.format(t0 + 2 * 86_400))"])
        try await harness.apply([try harness.writer.event(id: "buy", #"{"name":"purchased","attributes":{"cart_id":"c1"}}"#, at: t0 + 120)])
        #expect(try bodies(harness) == ["hello c1", "thanks c1"])
        #expect(try await instances(harness) == ["demo/paul completed done"])
        #expect(try await timers(harness).isEmpty)
        #expect(try await harness.advance(to: t0 + 3 * 86_400) == 0)
        #expect(try bodies(harness).count == 2)

        // One send per (journey, version, entry, node), named by the node.
        let version = harness.rules.config.journeys["demo/welcome"]!.version
        let sends = try harness.sends()
        #expect(sends.map(\.campaign) == ["welcome/hello", "welcome/thanks"])
        #expect(
            sends[1].sendID
                == MessageRenderer.sendID(
                    campaign: "demo/welcome/thanks", step: "message-0", profileKey: "demo/paul", occurrence: "journey \(version) event s1"))
    }

    @Test("the timeout takes the split: a VIP gets its own message, the others the reminder")
    func timeoutThenSplit() async throws {
        let harness = try await Self.harness()
        try await harness.apply([
            try harness.writer.update(id: "v", #"{"vip":true}"#, customID: "bob"),
            try harness.writer.event(id: "s-paul", #"{"name":"signed_up"}"#),
            try harness.writer.event(id: "s-bob", #"{"name":"signed_up"}"#, customID: "bob"),
        ])
        #expect(try bodies(harness) == ["hello none", "hello none"])
        #expect(try await harness.advance(to: t0 + 2 * 86_400 - 1) == 0)
        #expect(try await harness.advance(to: t0 + 2 * 86_400) == 2)
        #expect(Set(try harness.sends().suffix(2).map { "\($0.profileKey) \($0.content["body"] ?? "")" }) == ["demo/paul remind none", "demo/bob vip none"])
        #expect(try await instances(harness) == ["demo/bob completed done", "demo/paul completed done"])
    }

    @Test("an exit rule takes the profile out at once: its timer goes, nothing more is sent")
    func exitRule() async throws {
        let harness = try await Self.harness()
        try await harness.apply([
            try harness.writer.event(id: "s", #"{"name":"signed_up"}"#),
            try harness.writer.event(id: "u", #"{"name":"unsubscribed"}"#, at: t0 + 60),
        ])
        #expect(try await instances(harness) == ["demo/paul exit_rule wait-buy"])
        #expect(try await timers(harness).isEmpty)
        #expect(try await harness.advance(to: t0 + 3 * 86_400) == 0)
        #expect(try bodies(harness) == ["hello none"])
    }

    @Test("re-entry: never, after a cool-down, at most K at once; a replayed entry is the same instance")
    func reentry() async throws {
        var harness = try await Self.harness()
        let signUp = try harness.writer.event(id: "s1", #"{"name":"signed_up"}"#)
        try await harness.apply([signUp, try harness.writer.event(id: "s2", #"{"name":"signed_up"}"#, at: t0 + 60)])
        try await harness.apply([signUp])
        #expect(try await instances(harness) == ["demo/paul wait-buy"])
        #expect(try bodies(harness).count == 1)

        harness = try await Self.harness(Self.welcome(reentry: #"{"max_concurrent":2}"#))
        for (index, at) in [t0, t0 + 60, t0 + 120].enumerated() {
            try await harness.apply([try harness.writer.event(id: "s\(index)", #"{"name":"signed_up"}"#, at: at)])
        }
        #expect(try await instances(harness) == ["demo/paul wait-buy", "demo/paul wait-buy"])

        harness = try await Self.harness(Self.welcome(reentry: #"{"after":"1d"}"#))
        harness.clock.set(t0)
        try await harness.apply([try harness.writer.event(id: "a", #"{"name":"signed_up"}"#)])
        harness.clock.set(t0 + 3600)
        try await harness.apply([try harness.writer.event(id: "b", #"{"name":"signed_up"}"#, at: t0 + 3600)])
        #expect(try await instances(harness).count == 1)
        try await harness.advance(to: t0 + 86_400)
        try await harness.apply([try harness.writer.event(id: "c", #"{"name":"signed_up"}"#, at: t0 + 86_400)])
        #expect(try await instances(harness) == ["demo/paul wait-buy", "demo/paul wait-buy"])
    }

    @Test("a card node puts its content card into the profile's feed, once per (journey, version, entry, node), and goes on")
    func cardNode() async throws {
        let card = #"{"kind":"content_card","id":"offer","project":"demo","type":"text_announcement","variants":{"default":{"description":"Offer for {{ entry.cart_id | default: 'you' }}"}}}"#
        let journey = #"""
            {"kind":"journey","id":"cards","project":"demo","entry":{"event":"signed_up"},"start":"offer",
             "nodes":{"offer":{"card":"offer","next":"hi"},"hi":{"message":{"channel":"push","template":"hello"},"next":"done"},"done":{"exit":{}}}}
            """#
        let harness = try await EngagementHarness(try configuration([demoProject] + Self.templates + [card, journey]))
        let entry = try harness.writer.event(id: "s", #"{"name":"signed_up","attributes":{"cart_id":"c9"}}"#)
        try await harness.apply([entry])
        try await harness.apply([entry])
        let rows = try await harness.database.read { db in
            try Row.fetchAll(db, sql: "SELECT campaign_key, texts FROM content_cards").map { "\($0[0] as String) \($0[1] as String)" }
        }
        #expect(rows.count == 1 && rows[0].hasPrefix("demo/cards/offer ") && rows[0].contains("Offer for c9"), "\(rows)")
        #expect(try bodies(harness) == ["hello c9"])
    }

    @Test("the published limit of events per second per profile: the 51st ping within a second enters no journey; the next second's does")
    func eventsPerSecond() async throws {
        let ping = #"{"kind":"journey","id":"ping","project":"demo","entry":{"event":"ping"},"reentry":{"max_concurrent":1},"start":"done","nodes":{"done":{"exit":{}}}}"#
        let harness = try await Self.harness(ping)
        let limit = JourneyDefinition.maxEventsPerSecond
        try await harness.apply(try (0...limit).map { try harness.writer.event(id: "p\($0)", #"{"name":"ping"}"#, at: t0 + 0.001 * Double($0)) })
        // Bob is not held back by Paul's pings.
        try await harness.apply([try harness.writer.event(id: "b", #"{"name":"ping"}"#, customID: "bob", at: t0 + 0.5)])
        try await harness.apply([try harness.writer.event(id: "next", #"{"name":"ping"}"#, at: t0 + 1)])
        let entered = try await harness.database.read { db in
            try Row.fetchAll(db, sql: "SELECT profile_key, count(*) FROM journey_instances GROUP BY profile_key ORDER BY profile_key")
                .map { "\($0[0] as String) \($0[1] as Int)" }
        }
        #expect(entered == ["demo/bob 1", "demo/paul \(limit + 1)"])
    }

    @Test("retention: ended instances go when their re-entry rule no longer reads them; never's stay, instances in flight stay")
    func retention() async throws {
        let window: TimeInterval = 30 * 86_400
        for (reentry, keptAt35Days, keptAt41Days) in [(#""never""#, 1, 1), (#"{"after":"40d"}"#, 1, 0), (#"{"max_concurrent":2}"#, 0, 0)] {
            let harness = try await Self.harness(Self.welcome(reentry: reentry))
            // Paul ends at once (that cart bought); Bob waits.
            try await harness.apply([
                try harness.writer.event(id: "s1", #"{"name":"signed_up","attributes":{"cart_id":"c1"}}"#),
                try harness.writer.event(id: "b1", #"{"name":"purchased","attributes":{"cart_id":"c1"}}"#, at: t0 + 60),
                try harness.writer.event(id: "s2", #"{"name":"signed_up"}"#, customID: "bob"),
            ])
            func prune(after days: Double) async throws -> [String] {
                _ = try await OrchestratorRetention.pruneJourneyInstances(
                    harness.database, rules: harness.rules, now: t0 + days * 86_400, dedupeWindow: window, chunk: 1)
                return try await instances(harness)
            }
            #expect(try await prune(after: 29) == ["demo/bob wait-buy", "demo/paul completed done"], "\(reentry)")
            #expect(try await prune(after: 35).count == 1 + keptAt35Days, "\(reentry)")
            #expect(try await prune(after: 41) == ["demo/bob wait-buy"] + (keptAt41Days == 1 ? ["demo/paul completed done"] : []), "\(reentry)")
        }
    }

    @Test("an edit is a new version: the profile in flight finishes the version it entered; a new entry takes the new one")
    func versionsDrain() async throws {
        let harness = try await Self.harness()
        try await harness.apply([try harness.writer.event(id: "s-paul", #"{"name":"signed_up"}"#)])
        // Published again: the reminder is now `thanks`'s text.
        harness.rules = EngagementRules(
            config: try configuration([demoProject] + Self.templates + [Self.welcome(remind: "thanks")]),
            clock: { [clock = harness.clock] in clock.now })
        try harness.reopen()
        try await harness.apply([try harness.writer.event(id: "s-bob", #"{"name":"signed_up"}"#, customID: "bob", at: t0 + 60)])
        #expect(try await harness.advance(to: t0 + 3 * 86_400) == 2)
        #expect(Set(try harness.sends().suffix(2).map { "\($0.profileKey) \($0.content["body"] ?? "")" }) == ["demo/paul remind none", "demo/bob thanks none"])
        let versions = try await harness.database.read { db in try String.fetchAll(db, sql: "SELECT DISTINCT version FROM journey_instances ORDER BY entered_at") }
        #expect(versions.count == 2)
    }

    /// Publishes `journey` and lets the partition follow it (as `OrchestratorPartitions` does at a configuration change).
    func publish(_ harness: EngagementHarness, _ journey: String) async throws {
        harness.rules = EngagementRules(
            config: try configuration([demoProject] + Self.templates + [journey]), clock: { [clock = harness.clock] in clock.now })
        _ = try await OrchestratorPartition(harness.database).reconcile(rules: harness.rules)
    }

    @Test("a migration map moves the profiles in flight: a renamed wait, shortened, re-anchored to when each reached it")
    func migration() async throws {
        let harness = try await Self.harness()
        harness.clock.set(t0)
        try await harness.apply([try harness.writer.event(id: "s-paul", #"{"name":"signed_up"}"#)])
        harness.clock.set(t0 + 12 * 3600)
        try await harness.apply([try harness.writer.event(id: "s-bob", #"{"name":"signed_up"}"#, customID: "bob", at: t0 + 12 * 3600)])
        // At t0 + 30 h the wait becomes `wait-purchase`, one day long: Paul's day has passed, Bob's ends at t0 + 36 h.
        harness.clock.set(t0 + 30 * 3600)
        try await publish(harness, Self.welcome(wait: "wait-purchase", timeout: "1d", migrate: #","migrate":{"nodes":{"wait-buy":"wait-purchase"}}"#))
        #expect(try await timers(harness) == [
            "demo/welcome wait-purchase event s-bob \(WireTime.format(t0 + 36 * 3600))",
            "demo/welcome wait-purchase event s-paul \(WireTime.format(t0 + 86_400))",
        ])
        #expect(try await harness.advance(to: t0 + 30 * 3600) == 1)
        #expect(try await instances(harness) == ["demo/bob wait-purchase", "demo/paul completed done"])
        #expect(try await harness.advance(to: t0 + 36 * 3600) == 1)
        #expect(try bodies(harness) == ["hello none", "hello none", "remind none", "remind none"])
        let version = harness.rules.config.journeys["demo/welcome"]!.version
        let versions = try await harness.database.read { db in try String.fetchAll(db, sql: "SELECT DISTINCT version FROM journey_instances") }
        #expect(versions == [version])
    }

    @Test("a migration that cannot move a profile (its node removed, not mapped) leaves it on its version, which it finishes")
    func migrationRefused() async throws {
        let harness = try await Self.harness()
        try await harness.apply([try harness.writer.event(id: "s", #"{"name":"signed_up"}"#)])
        // `wait-buy` is gone and not mapped (the map names another node).
        try await publish(harness, Self.welcome(wait: "wait-purchase", migrate: #","migrate":{"nodes":{"hello":"hello"}}"#))
        #expect(try await instances(harness) == ["demo/paul wait-buy"])
        #expect(try await harness.advance(to: t0 + 2 * 86_400) == 1)
        #expect(try bodies(harness) == ["hello none", "remind none"])
        #expect(try await instances(harness) == ["demo/paul completed done"])
        // What `herald config apply` refuses before publishing such a version.
        let old = try #require(try configuration([demoProject] + Self.templates + [Self.welcome()]).journeys["demo/welcome"])
        let new = try #require(
            try configuration([demoProject] + Self.templates + [Self.welcome(wait: "wait-purchase", migrate: #","migrate":{"nodes":{"hello":"hello"}}"#)])
                .journeys["demo/welcome"])
        #expect(new.migrationProblems(from: old) == [
            "migrate.nodes: instances may wait at wait-buy (version \(old.version)), which is neither in this version nor mapped"
        ])
    }

    /// 2,000 here (the main run is CPU-bound); `JourneyBenchmark` times 10,000 and more in release.
    @Test("2,000 profiles waiting: a wait shortened below the time they have waited lets every one of them go at the next timer rounds")
    func migrationAtScale() async throws {
        let harness = try await Self.harness()
        harness.clock.set(t0)
        let count = 2_000
        for chunk in stride(from: 0, to: count, by: 1_000) {
            try await harness.apply(try (chunk..<chunk + 1_000).map { try harness.writer.event(id: "s\($0)", #"{"name":"signed_up"}"#, customID: "p\($0)") })
        }
        harness.clock.set(t0 + 86_400 + 60)
        try await publish(harness, Self.welcome(timeout: "1d", migrate: #","migrate":{"nodes":{"wait-buy":"wait-buy"}}"#))
        var ran = 0
        while true {
            let round = try await harness.advance(to: t0 + 86_400 + 60)
            if round == 0 { break }
            ran += round
        }
        #expect(ran == count)
        #expect(try harness.sends().filter { $0.content["body"] == "remind none" }.count == count)
    }

    @Test("a journey removed from the configuration ends its instances at their next step")
    func removed() async throws {
        let harness = try await Self.harness()
        try await harness.apply([try harness.writer.event(id: "s", #"{"name":"signed_up"}"#)])
        harness.rules = EngagementRules(config: try configuration([demoProject] + Self.templates), clock: { [clock = harness.clock] in clock.now })
        #expect(try await harness.advance(to: t0 + 3 * 86_400) == 1)
        #expect(try await instances(harness) == ["demo/paul removed wait-buy"])
        #expect(try bodies(harness).count == 1)
    }

    @Test("a delay until 09:00 in the profile's time zone, on the weekdays named")
    func delayUntilLocalTime() async throws {
        let journey = #"""
            {"kind":"journey","id":"morning","project":"demo","entry":{"event":"signed_up"},"start":"wait",
             "nodes":{"wait":{"delay":{"until":"09:00","on":["monday"]},"next":"hi"},
                      "hi":{"message":{"channel":"push","template":"hello"},"next":"done"},"done":{"exit":true}}}
            """#
        let harness = try await Self.harness(journey)
        // t0 is 2026-11-18T11:06:40Z, a Wednesday: the next Monday 09:00 in Paris is 2026-11-23T08:00:00Z.
        try await harness.apply([
            try harness.writer.update(id: "tz", #"{"$timezone":"Europe/Paris"}"#),
            try harness.writer.event(id: "s", #"{"name":"signed_up"}"#),
        ])
        let monday = try #require(WireTime.parse("2026-11-23T08:00:00Z"))
        #expect(try await timers(harness) == ["demo/morning wait event s \(WireTime.format(monday))"])
        #expect(try await harness.advance(to: monday - 1) == 0)
        #expect(try await harness.advance(to: monday) == 1)
        #expect(try bodies(harness) == ["hello none"])
    }

    @Test("an experiment node's arm is fixed per profile, and both arms are taken")
    func experimentArms() {
        let arms = [JourneyDefinition.Arm(name: "a", percent: 50, next: "x"), JourneyDefinition.Arm(name: "b", percent: 50, next: "y")]
        let taken = (0..<200).map { JourneyArms.arm(arms, journey: "demo/j", node: "ab", profileKey: "demo/p\($0)").name }
        #expect(Set(taken) == ["a", "b"])
        #expect(taken.filter { $0 == "a" }.count > 70 && taken.filter { $0 == "a" }.count < 130)
        #expect((0..<200).map { JourneyArms.arm(arms, journey: "demo/j", node: "ab", profileKey: "demo/p\($0)").name } == taken)
    }
}
