import Foundation
import GRDB
import PartitionStore
import Shared
import Testing

@testable import OrchestratorDomain

/// Journeys entered by a server's API call and by a schedule (docs/journeys.md, "Entries"): the entry's properties read
/// as `entry.…`, the dead letters of a trigger that cannot enter, schedules at an instant, every period, and at a local
/// time of day in each member's zone.
@Suite("Journeys: API and scheduled entries", .serialized)
struct JourneyEntryTests {
    static let templates = [
        #"{"kind":"template","id":"code","project":"demo","channel":"push","variants":{"default":{"body":"Code {{ entry.code }} ({{ canvas_entry_properties.plan }}, {{ trigger.plan }})"}}}"#,
        #"{"kind":"template","id":"news","project":"demo","channel":"push","variants":{"default":{"body":"News for {{ c.first_name | default: 'you' }}"}}}"#,
        #"{"kind":"template","id":"more","project":"demo","channel":"push","variants":{"default":{"body":"More for {{ c.first_name | default: 'you' }}"}}}"#,
        #"{"kind":"segment","id":"vip","project":"demo","condition":"c.vip = true"}"#,
    ]

    static func harness(_ journeys: String...) async throws -> EngagementHarness {
        try await EngagementHarness(try configuration([demoProject] + templates + journeys))
    }

    func bodies(_ harness: EngagementHarness) throws -> [String] {
        try harness.sends().map { "\($0.customID ?? "") \($0.content["body"] ?? "")" }
    }

    @Test("entered by the API: the call's properties are entry.… (and trigger.…) in splits and templates; what cannot enter is a dead letter")
    func apiEntry() async throws {
        let journey = #"""
            {"kind":"journey","id":"onboard","project":"demo","entry":{"api":true},"start":"gold",
             "nodes":{"gold":{"split":{"branches":[{"condition":"entry.plan = \"gold\"","next":"code"}],"else":"done"}},
                      "code":{"message":{"channel":"push","template":"code"},"next":"done"},"done":{"exit":{}}}}
            """#
        let paused = #"{"kind":"journey","id":"paused","project":"demo","enabled":false,"entry":{"api":true},"start":"done","nodes":{"done":{"exit":{}}}}"#
        let byEvent = #"{"kind":"journey","id":"by-event","project":"demo","entry":{"event":"x"},"start":"done","nodes":{"done":{"exit":{}}}}"#
        let harness = try await Self.harness(journey, paused, byEvent)
        func enter(_ id: String, _ customID: String, journey: String = "onboard", plan: String) -> KafkaRecord {
            harness.writer.record(
                .journeyTrigger, id: id, customID: customID,
                fields: [
                    JSONMember("journey", .string(journey)),
                    JSONMember("entry_properties", .object([JSONMember("code", .string("C-\(id)")), JSONMember("plan", .string(plan))])),
                ])
        }
        let paulsEntry = enter("a1", "paul", plan: "gold")
        try await harness.apply([
            try harness.writer.update(id: "1", #"{"first_name":"Paul"}"#),
            try harness.writer.update(id: "2", #"{"first_name":"Zoe"}"#, customID: "zoe"),
            paulsEntry,
            enter("a2", "zoe", plan: "silver"),
            enter("a3", "nobody", plan: "gold"),
            enter("a4", "paul", journey: "nope", plan: "gold"),
            enter("a5", "paul", journey: "paused", plan: "gold"),
            enter("a6", "paul", journey: "by-event", plan: "gold"),
        ])
        #expect(try bodies(harness) == ["paul Code C-a1 (gold, gold)"])
        #expect(try harness.sends().first?.trigger.type == .api)
        #expect(harness.deadLetters.map(\.reason) == [
            "no profile demo/nobody for journey onboard", "no enabled journey nope entered by the API",
            "no enabled journey paused entered by the API", "no enabled journey by-event entered by the API",
        ])
        // Both entered; Zoe's plan took her to the end. A replayed call is the instance it made.
        try await harness.apply([paulsEntry])
        let instances = try await harness.database.read { db in
            try Row.fetchAll(db, sql: "SELECT profile_key, entry_id, ended FROM journey_instances ORDER BY profile_key")
                .map { "\($0[0] as String) \($0[1] as String) \($0[2] as String? ?? "-")" }
        }
        #expect(instances == ["demo/paul api a1 completed done", "demo/zoe api a2 completed done"])
        #expect(try harness.sends().count == 1)
    }

    @Test("entered on a schedule: each run enters the audience's members once; a replay or a reopened partition enters nobody twice")
    func scheduledEntry() async throws {
        let journey = #"""
            {"kind":"journey","id":"weekly","project":"demo","entry":{"schedule":{"at":"2026-11-18T12:00:00Z","every":"7d"}},
             "audience":"vip","reentry":{"after":"1d"},"start":"news",
             "nodes":{"news":{"message":{"channel":"push","template":"news"},"next":"later"},
                      "later":{"delay":"1d","next":"more"},
                      "more":{"message":{"channel":"push","template":"more"},"next":"done"},"done":{"exit":{}}}}
            """#
        let harness = try await Self.harness(journey)
        try await harness.apply([
            try harness.writer.update(id: "1", #"{"vip":true,"first_name":"Paul"}"#),
            try harness.writer.update(id: "2", #"{"vip":false,"first_name":"Zoe"}"#, customID: "zoe"),
        ])
        _ = try await OrchestratorPartition(harness.database).reconcile(rules: harness.rules)
        // The first run at 12:00 (t0 is 11:06:40): Paul enters, Zoe is not in the audience.
        #expect(try await harness.advance(to: t0 + 3199) == 0)
        #expect(try await harness.advance(to: t0 + 3200) == 1)
        #expect(try bodies(harness) == ["paul News for Paul"])
        #expect(try harness.sends().first?.trigger.type == .schedule)
        try harness.reopen()
        _ = try await OrchestratorPartition(harness.database).reconcile(rules: harness.rules)
        #expect(try await harness.advance(to: t0 + 3200 + 86_400) == 1)
        #expect(try bodies(harness) == ["paul News for Paul", "paul More for Paul"])
        // A week later, another run: another instance.
        #expect(try await harness.advance(to: t0 + 3200 + 7 * 86_400) == 1)
        #expect(try bodies(harness).count == 3)
        let entries = try await harness.database.read { db in
            try String.fetchAll(db, sql: "SELECT entry_id FROM journey_instances ORDER BY entered_at")
        }
        #expect(entries == ["schedule 2026-11-18T12:00:00.000Z", "schedule 2026-11-25T12:00:00.000Z"])
    }

    @Test("entered at 09:00 in each member's time zone: the first message leaves at that member's 09:00")
    func localTimeEntry() async throws {
        let journey = #"""
            {"kind":"journey","id":"morning","project":"demo","entry":{"schedule":{"at":"09:00","timezone":"local","on":"2026-12-01"}},
             "audience":"vip","start":"news",
             "nodes":{"news":{"message":{"channel":"push","template":"news"},"next":"done"},"done":{"exit":{}}}}
            """#
        let harness = try await Self.harness(journey)
        try await harness.apply([
            try harness.writer.update(id: "1", #"{"vip":true,"$timezone":"Europe/Paris"}"#),
            try harness.writer.update(id: "2", #"{"vip":true,"$timezone":"Asia/Tokyo"}"#, customID: "yuki"),
        ])
        _ = try await OrchestratorPartition(harness.database).reconcile(rules: harness.rules)
        // The day's preparation, then each zone's release, a little ahead of its 09:00.
        for time in ["2026-11-30T18:00:00Z", "2026-11-30T23:59:30Z", "2026-12-01T07:59:30Z", "2026-12-01T12:00:00Z"] {
            let at = try #require(WireTime.parse(time))
            while try await harness.advance(to: at) > 0 {}
        }
        let leaves = Dictionary(uniqueKeysWithValues: try harness.sends().map { ($0.customID ?? "", $0.notBefore ?? $0.decidedAt) })
        #expect(leaves == [
            "yuki": try #require(WireTime.parse("2026-12-01T00:00:00Z")), "paul": try #require(WireTime.parse("2026-12-01T08:00:00Z")),
        ])
    }
}
