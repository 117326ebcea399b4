import Foundation
import GRDB
import Logging
import Shared
import Testing

@testable import OrchestratorDomain
@testable import PartitionStore

/// What reads a segment while its backfill runs (docs/campaigns.md, "Backfill"): a schedule waits for it, a write's
/// entry is a real one, an audience check evaluates its profile. Published in the same configuration as the segment,
/// a local-time schedule used to find the segment empty and mark its day done (0 to 31 of 38 members reached).
@Suite("Segments being backfilled", .serialized)
struct SegmentBackfillTests {
    static let base = [
        demoProject,
        #"{"kind":"template","id":"news","project":"demo","channel":"sms","variants":{"default":{"text":"News"}}}"#,
    ]
    static let vip = #"{"kind":"segment","id":"vip","project":"demo","condition":"c.vip = true"}"#

    /// A partition whose profiles (custom ID, attributes) were written before `objects` (a new segment and what reads
    /// it) were published: the new configuration is reconciled, its backfill not run yet.
    func published(_ objects: [String], profiles: [(String, String)], changelog: String? = nil) async throws -> EngagementHarness {
        let harness = try await EngagementHarness(try configuration(Self.base), changelog: changelog)
        for (index, (customID, attributes)) in profiles.enumerated() {
            try await harness.apply([try harness.writer.update(id: "p\(index)", attributes, customID: customID)])
        }
        harness.rules = EngagementRules(config: try configuration(Self.base + objects), clock: { [clock = harness.clock] in clock.now })
        #expect(try await OrchestratorPartition(harness.database).reconcile(rules: harness.rules) == ["demo/vip"])
        return harness
    }

    static func vips(_ count: Int, _ attributes: String = #"{"vip":true}"#) -> [(String, String)] {
        (0..<count).map { ("vip\($0)", attributes) } + (0..<5).map { ("other\($0)", #"{"vip":false}"#) }
    }

    func recipients(_ harness: EngagementHarness) throws -> [String] {
        try harness.sends(.sms).compactMap(\.customID).sorted()
    }

    @Test("a schedule published with its new audience waits for the audience's backfill, then reaches every member once")
    func scheduleWaits() async throws {
        let harness = try await published(
            [
                Self.vip,
                #"{"kind":"campaign","id":"launch","project":"demo","trigger":{"schedule":{"at":"2026-11-18T11:07:40Z"}},"audience":"vip","messages":[{"channel":"sms","template":"news"}]}"#,
            ], profiles: Self.vips(30))
        // Due at its time (t0 + 60 s): the run waits while the backfill has not finished, however far it went.
        #expect(try await harness.advance(to: t0 + 60) == 1)
        _ = try await OrchestratorPartition(harness.database).backfill(rules: harness.rules, segment: "demo/vip", limit: 10)
        #expect(try await harness.advance(to: t0 + 61) == 1)
        #expect(try harness.sends(.sms).isEmpty)
        try await harness.backfill()
        #expect(try await harness.advance(to: t0 + 62) == 1)
        #expect(try recipients(harness) == (0..<30).map { "vip\($0)" }.sorted())
        #expect(try harness.sends(.sms).allSatisfy { $0.occurrence == "schedule 2026-11-18T11:07:40.000Z" })
        #expect(try await harness.advance(to: t0 + 86_400) == 0)
        #expect(try harness.sends(.sms).count == 30)
    }

    @Test("a partition moved mid-backfill: its new owner restores where the backfill stood, finishes it, and the waiting schedule reaches every member once")
    func movedMidBackfill() async throws {
        let topic = HeraldTopic.stateOrchestrator.name
        let harness = try await published(
            [
                Self.vip,
                #"{"kind":"campaign","id":"launch","project":"demo","trigger":{"schedule":{"at":"2026-11-18T11:07:40Z"}},"audience":"vip","messages":[{"channel":"sms","template":"news"}]}"#,
            ], profiles: Self.vips(30), changelog: topic)
        #expect(try await harness.advance(to: t0 + 60) == 1)
        _ = try await OrchestratorPartition(harness.database).backfill(rules: harness.rules, segment: "demo/vip", limit: 10)
        let cursor = try await harness.database.read { db in try SegmentBackfillsTable(db).cursor("demo/vip")?.after }
        #expect(cursor != nil)

        // The partition moves to an instance without its database: restored from the changelog the first produced.
        let log = InMemoryChangelog()
        try await harness.database.produceOutbox(with: log)
        let owner = PartitionOwner(
            directory: temporaryDirectory(), service: "orchestrator", migrator: OrchestratorSchema.migrator, publisher: log,
            changelog: ChangelogSettings(topic: topic, source: log), logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }))
        _ = try await owner.partitionsAssigned([TopicPartition(HeraldTopic.ingest.name, 0)])
        let restored = try #require(await owner.database(0))
        #expect(try await restored.read { db in try SegmentBackfillsTable(db).cursor("demo/vip")?.after } == cursor)
        try harness.database.close()
        harness.database = restored
        harness.outbox = []

        // The schedule still waits: the backfill is not done on the new owner either.
        #expect(try await harness.advance(to: t0 + 61) == 1)
        #expect(try harness.sends(.sms).isEmpty)
        #expect(try await harness.backfill() == ["demo/vip"])
        #expect(try await harness.advance(to: t0 + 62) == 1)
        #expect(try recipients(harness) == (0..<30).map { "vip\($0)" }.sorted())
        #expect(try await harness.segments("demo/vip7") == ["demo/vip"])
        #expect(try await harness.advance(to: t0 + 86_400) == 0)
        #expect(try harness.sends(.sms).count == 30)
    }

    @Test("a local-time schedule published with its new audience is prepared once the backfill is done: every member at their 12:00")
    func localScheduleWaits() async throws {
        let zones = ["UTC", "Asia/Tokyo"]
        let harness = try await published(
            [
                Self.vip,
                #"{"kind":"campaign","id":"noon","project":"demo","trigger":{"schedule":{"at":"12:00","timezone":"local","on":"2026-11-19"}},"audience":"vip","messages":[{"channel":"sms","template":"news"}]}"#,
            ], profiles: (0..<8).map { ("vip\($0)", #"{"vip":true,"$timezone":"\#(zones[$0 % 2])"}"#) } + Self.vips(0))
        // Prepared an hour before 12:00 first comes anywhere (UTC+14: 2026-11-18T22:00Z), but not before the backfill.
        #expect(try await harness.advance(to: WireTime.parse("2026-11-18T21:00:00Z")!) == 1)
        let prepared = try await harness.database.read { db in
            (try Int.fetchOne(db, sql: "SELECT count(*) FROM local_sends") ?? 0, try CampaignStateTable(db).lastDay("demo/noon"))
        }
        #expect(prepared.0 == 0 && prepared.1 == nil)
        try await harness.backfill()
        var clock = WireTime.parse("2026-11-18T21:00:00Z")!
        while clock < WireTime.parse("2026-11-20T00:00:00Z")! {
            clock += 60
            while try await harness.advance(to: clock) > 0 {}
        }
        let sends = try harness.sends(.sms)
        #expect(try recipients(harness) == (0..<8).map { "vip\($0)" })
        for send in sends {
            let zone = send.customID.flatMap { Int($0.dropFirst(3)) }.map { zones[$0 % 2] }
            #expect(send.notBefore == WireTime.parse(zone == "UTC" ? "2026-11-19T12:00:00Z" : "2026-11-19T03:00:00Z"))
        }
    }

    @Test("during the backfill, a write's entry is one: a member not reached yet does not enter again, a newcomer does")
    func entriesDuringBackfill() async throws {
        let harness = try await published(
            [
                Self.vip,
                #"{"kind":"campaign","id":"welcome","project":"demo","trigger":{"segment_entry":"vip"},"messages":[{"channel":"sms","template":"news"}]}"#,
            ], profiles: Self.vips(3) + [("zoe", #"{"vip":false}"#)])
        // vip1 was in the segment before this write (which the segment reads): no entry. Zoe enters.
        try await harness.apply([
            try harness.writer.update(id: "w1", #"{"vip":true,"first_name":"Vic"}"#, customID: "vip1"),
            try harness.writer.update(id: "w2", #"{"vip":true}"#, customID: "zoe"),
        ])
        #expect(try recipients(harness) == ["zoe"])
        // The backfill reaches everyone without entries; the segment holds the three members and Zoe.
        try await harness.backfill()
        #expect(try recipients(harness) == ["zoe"])
        let members = try await harness.database.read { db in
            try String.fetchAll(db, sql: "SELECT profile_key FROM segment_members WHERE segment_key = 'demo/vip' ORDER BY 1")
        }
        #expect(members == ["demo/vip0", "demo/vip1", "demo/vip2", "demo/zoe"])
        // Afterwards, leaving and entering are campaigns' triggers as always.
        try await harness.apply([
            try harness.writer.update(id: "w3", #"{"vip":false}"#, customID: "vip2"),
            try harness.writer.update(id: "w4", #"{"vip":true}"#, customID: "vip2"),
        ])
        #expect(try recipients(harness) == ["vip2", "zoe"])
    }

    @Test("a delayed send whose audience changed condition meanwhile is decided on the profile, not on the half-built segment")
    func audienceDuringBackfill() async throws {
        func config(_ condition: String) throws -> HeraldConfiguration {
            try configuration(
                Self.base + [
                    #"{"kind":"segment","id":"vip","project":"demo","condition":"\#(condition)"}"#,
                    #"{"kind":"campaign","id":"cart","project":"demo","trigger":{"event":"ADD_TO_CART"},"delay":"1h","audience":"vip","messages":[{"channel":"sms","template":"news"}]}"#,
                ])
        }
        let harness = try await EngagementHarness(try config("c.vip = true"))
        try await harness.apply([
            try harness.writer.update(id: "1", #"{"vip":true}"#),
            try harness.writer.event(id: "2", #"{"name":"add_to_cart"}"#),
        ])
        // The segment's condition changes while the delay waits: its membership is forgotten, its backfill not run.
        harness.rules = EngagementRules(config: try config("c.vip = true or c.gold = true"), clock: { [clock = harness.clock] in clock.now })
        #expect(try await OrchestratorPartition(harness.database).reconcile(rules: harness.rules) == ["demo/vip"])
        #expect(try await harness.advance(to: t0 + 3600) == 1)
        #expect(try recipients(harness) == ["paul"])
    }
}
