import Foundation
import GRDB
import Ingest
import Shared
import Testing

@testable import OrchestratorDomain
@testable import PartitionStore

/// Send rate limits of scheduled campaigns (issue 21), with an injected clock.
@Suite("Campaign timing: send rate limits", .serialized)
struct SendRateTests {
    static let start = WireTime.parse("2026-12-01T09:00:00Z")!

    static func config(trigger: String, rate: String, channels: [String] = ["sms"]) throws -> HeraldConfiguration {
        let messages = channels.map { #"{"channel":"\#($0)","template":"hi-\#($0)"}"# }.joined(separator: ",")
        return try configuration([
            #"{"kind":"project","id":"demo"}"#,
            #"{"kind":"segment","id":"members","project":"demo","condition":"c.member = true"}"#,
            #"{"kind":"template","id":"hi-sms","project":"demo","channel":"sms","variants":{"default":{"text":"Sale"}}}"#,
            #"{"kind":"template","id":"hi-email","project":"demo","channel":"email","variants":{"default":{"subject":"Sale","text":"Sale"}}}"#,
            #"{"kind":"campaign","id":"sale","project":"demo","type":"transactional","trigger":{"schedule":\#(trigger)},"audience":"members","reeligibility":"always","rate_limit":\#(rate),"messages":[\#(messages)]}"#,
        ])
    }

    /// `count` members, with `$timezone` `zone`.
    func members(_ harness: EngagementHarness, _ count: Int, zone: String = "UTC") async throws {
        try await harness.apply(try (0..<count).map { index in
            let (edit, problems) = ProfileValidation.validate(
                try JSONParser.parse(Array(#"{"$timezone":"\#(zone)","member":true}"#.utf8)), path: "a", identified: true)
            precondition(problems.isEmpty)
            return harness.writer.record(.profileUpdate, id: "m\(zone)\(index)", customID: "\(zone)-\(index)", fields: [JSONMember("profile", edit.json)])
        })
    }

    /// A partition with `count` members and the campaign at 09:00 UTC with `rate`, reconciled a minute before.
    func started(_ rate: String, members count: Int) async throws -> EngagementHarness {
        let harness = try await EngagementHarness(try Self.config(trigger: #"{"at":"2026-12-01T09:00:00Z"}"#, rate: rate))
        try await members(harness, count)
        harness.clock.set(Self.start - 60)
        _ = try await OrchestratorPartition(harness.database).reconcile(rules: harness.rules)
        return harness
    }

    /// Moves the clock to each instant in turn (running what is due), returning how many SMS were decided by each.
    func sent(_ harness: EngagementHarness, at instants: [Date]) async throws -> [Int] {
        var counts: [Int] = []
        for instant in instants {
            while try await harness.advance(to: instant) > 0 {}
            counts.append(try harness.sends(.sms).count)
        }
        return counts
    }

    @Test("60 per minute: one member a second, each once, across a restart; after downtime no burst")
    func spread() async throws {
        let harness = try await started(#"{"max":60,"per":"1m"}"#, members: 10)
        let s = Self.start
        #expect(try await sent(harness, at: [s - 0.001, s, s + 0.999, s + 1, s + 1.5, s + 2]) == [0, 1, 1, 2, 2, 3])
        try harness.reopen()
        #expect(try await sent(harness, at: [s + 2.5, s + 3]) == [3, 4])
        // Ticks a little late keep the rate on average: the next slot counts from the one before, not from the tick.
        #expect(try await sent(harness, at: [s + 4.09, s + 4.999, s + 5]) == [5, 5, 6])
        // Down for a minute: one page at once, then the rate again (no catching up).
        #expect(try await sent(harness, at: [s + 65, s + 65.999, s + 66]) == [7, 7, 8])
        #expect(try await sent(harness, at: [s + 67, s + 68, s + 100]) == [9, 10, 10])
        let sends = try harness.sends(.sms)
        #expect(Set(sends.map(\.profileKey)).count == 10)
        // Each member decided at its slot.
        #expect(sends.map(\.decidedAt).prefix(3) == [s, s + 1, s + 2])
        let pace = try await harness.database.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM campaign_pace") }
        #expect(pace == 1)
    }

    @Test("a spread that outlasts the schedule's hour of grace goes on across configuration changes")
    func longSpread() async throws {
        let harness = try await started(#"{"max":1,"per":"1h"}"#, members: 3)
        let s = Self.start
        #expect(try await sent(harness, at: [s, s + 3600]) == [1, 2])
        // A configuration change (or the partition opening elsewhere) reconciles: the run keeps its cursor.
        harness.clock.set(s + 5400)
        _ = try await OrchestratorPartition(harness.database).reconcile(rules: harness.rules)
        #expect(try await sent(harness, at: [s + 7199, s + 7200, s + 20_000]) == [2, 3, 3])
    }

    @Test("the limit counts messages and is shared by the partitions: 240 a minute over 4 partitions, 2 channels")
    func sharedAndPerMessage() async throws {
        let harness = try await EngagementHarness(
            try Self.config(trigger: #"{"at":"2026-12-01T09:00:00Z"}"#, rate: #"{"max":240,"per":"1m"}"#, channels: ["sms", "email"]))
        harness.rules = EngagementRules(config: harness.rules.config, clock: harness.rules.clock, partitions: 4)
        try await members(harness, 6)
        harness.clock.set(Self.start - 60)
        _ = try await OrchestratorPartition(harness.database).reconcile(rules: harness.rules)
        // 60 a minute in this partition, two messages per member: a member every 2 s.
        let s = Self.start
        #expect(try await sent(harness, at: [s, s + 1.999, s + 2, s + 4, s + 6, s + 8, s + 10]) == [1, 1, 2, 3, 4, 5, 6])
        #expect(try harness.sends(.email).count == 6)
    }

    @Test("pages of a second's worth of messages (at least one member, at most a whole page)")
    func pageSizes() throws {
        func pace(_ rate: String, partitions: Int = 1) throws -> (Int, TimeInterval)? {
            let config = try Self.config(trigger: #"{"at":"2026-12-01T09:00:00Z"}"#, rate: rate)
            let campaign = try #require(config.campaigns["demo/sale"])
            let rules = EngagementRules(config: config, partitions: partitions)
            return try DatabaseQueue().read { db in
                SendPacing(db: db, rules: rules, now: Date()).pace(campaign).map { ($0.members, $0.every) }
            }
        }
        #expect(try pace(#"{"max":600000,"per":"1m"}"#)! == (2000, 0.2))
        #expect(try pace(#"{"max":6000,"per":"1m"}"#)! == (100, 1))
        let shared = try #require(try pace(#"{"max":6000,"per":"1m"}"#, partitions: 12))  // 500 a minute: 8.3 a second
        #expect(shared.0 == 9 && abs(shared.1 - 1.08) < 1e-9)
        #expect(try pace(#"{"max":10,"per":"1s"}"#)! == (10, 1))
        #expect(try pace(#"{"max":1,"per":"1d"}"#)! == (1, 86_400))
    }

    @Test("a local-time release is spread too, instants that overlap sharing the campaign's rate")
    func localRelease() async throws {
        let harness = try await EngagementHarness(
            try Self.config(trigger: #"{"at":"09:00","timezone":"local","on":"2026-12-01"}"#, rate: #"{"max":1,"per":"20m"}"#))
        try await members(harness, 4, zone: "UTC")
        try await members(harness, 3, zone: "Atlantic/Cape_Verde")  // UTC−1: its 09:00 is 10:00Z, while UTC's still goes
        harness.clock.set(Self.start - 86_400)
        _ = try await OrchestratorPartition(harness.database).reconcile(rules: harness.rules)
        let s = Self.start
        while try await harness.advance(to: s - 3600) > 0 {}
        let slots = (0..<8).map { s + Double($0) * 1200 }
        #expect(try await sent(harness, at: slots) == [1, 2, 3, 4, 5, 6, 7, 7])
        let sends = try harness.sends(.sms)
        #expect(sends.map(\.decidedAt) == Array(slots.prefix(7)))
        #expect(sends.prefix(3).allSatisfy { $0.customID?.hasPrefix("UTC") == true })
        #expect(Set(sends.compactMap(\.customID)).count == 7)
    }
}
