import Foundation
import GRDB
import Shared
import Testing

@testable import OrchestratorDomain
@testable import PartitionStore

/// Quiet hours in the recipient's local time, with an injected clock (issue 21).
@Suite("Campaign timing: quiet hours", .serialized)
struct CampaignTimingTests {
    static func utc(_ text: String) -> Date { WireTime.parse(text)! }

    /// A project whose profiles default to New York time and whose marketing is quiet from 21:00 to 08:00.
    static func config(campaign extra: String = "", project quiet: String = #"{"from":"21:00","to":"08:00"}"#,
                       type: String = "marketing", segments: [String] = []) throws -> HeraldConfiguration {
        try configuration(
            ([#"{"kind":"project","id":"demo","timezone":"America/New_York","quiet_hours":\#(quiet)}"#,
              #"{"kind":"template","id":"hi","project":"demo","channel":"push","variants":{"default":{"body":"Hi"}}}"#,
              #"{"kind":"campaign","id":"opened","project":"demo","type":"\#(type)","trigger":{"event":"OPENED"},"reeligibility":"always","messages":[{"channel":"push","template":"hi"}]\#(extra)}"#,
             ] + segments))
    }

    func timers(_ harness: EngagementHarness) async throws -> [String] {
        try await harness.database.read { db in
            try Row.fetchAll(db, sql: "SELECT profile_key, kind, due_at FROM timers WHERE kind = 'quiet' ORDER BY profile_key")
                .map { "\($0["profile_key"] as String) \($0["due_at"] as String)" }
        }
    }

    /// paul in Paris (his own `$timezone`), anna in Tokyo (her installation's), bob in New York (the project's).
    func people(_ harness: EngagementHarness) async throws {
        var records = [
            try harness.writer.update(id: "p", #"{"$timezone":"Europe/Paris"}"#),
            harness.writer.record(.profileUpdate, id: "b", customID: "bob", fields: [
                JSONMember("profile", try JSONParser.parse(Array(#"{"custom_attributes":{"vip.b":true}}"#.utf8)))]),
        ]
        harness.writer.source = .app(id: "ios", dev: false)
        records.append(
            harness.writer.record(
                .installation, id: "i", customID: "anna", installationID: "ANNA-1",
                fields: installationFields([JSONMember("timezone", .string("Asia/Tokyo"))])))
        harness.writer.source = .server
        try await harness.apply(records)
    }

    func opened(_ harness: EngagementHarness, _ people: [String], at: Date, tag: String = "") -> [KafkaRecord] {
        people.map { person in
            harness.writer.record(
                .event, id: "o-\(person)\(tag)", customID: person, at: at,
                fields: [JSONMember("event", .object([JSONMember("name", .string("OPENED"))]))])
        }
    }

    @Test("held in the profile's own, its installation's or the project's time zone, released at its window's end, after a restart")
    func holdAndRelease() async throws {
        let harness = try await EngagementHarness(try Self.config())
        try await people(harness)
        // 21:30 UTC: 22:30 in Paris (quiet), 06:30 the next day in Tokyo (quiet), 16:30 in New York (not).
        let at = Self.utc("2026-11-18T21:30:00Z")
        harness.clock.set(at)
        try await harness.apply(opened(harness, ["paul", "anna", "bob"], at: at))
        #expect(try harness.sends().map(\.profileKey) == ["demo/bob"])
        #expect(try await timers(harness) == ["demo/anna 2026-11-18T23:00:00.000Z", "demo/paul 2026-11-19T07:00:00.000Z"])
        // What the status board shows (herald_quiet_window_held and the next release).
        #expect(try await OrchestratorPartition(harness.database).heldSends() == (2, WireTime.parse("2026-11-18T23:00:00.000Z")))

        #expect(try await harness.advance(to: Self.utc("2026-11-18T22:59:59Z")) == 0)
        #expect(try await harness.advance(to: Self.utc("2026-11-18T23:00:00Z")) == 1)
        #expect(try harness.sends().map(\.profileKey) == ["demo/bob", "demo/anna"])
        #expect(try await OrchestratorPartition(harness.database).heldSends() == (1, WireTime.parse("2026-11-19T07:00:00.000Z")))
        try harness.reopen()
        #expect(try await harness.advance(to: Self.utc("2026-11-19T06:59:00Z")) == 0)
        #expect(try await harness.advance(to: Self.utc("2026-11-19T07:00:00Z")) == 1)
        let sends = try harness.sends()
        #expect(sends.map(\.profileKey) == ["demo/bob", "demo/anna", "demo/paul"])
        // Released once: the same occurrence, decided at the window's end.
        #expect(sends.last?.decidedAt == Self.utc("2026-11-19T07:00:00Z"))
        #expect(try await harness.advance(to: Self.utc("2026-11-20T07:00:00Z")) == 0)
        #expect(try harness.sends().count == 3)
    }

    @Test("dropped when the window says drop; a campaign's own window and `off` override the project's")
    func dropAndOverride() async throws {
        let at = Self.utc("2026-11-18T21:30:00Z")  // 22:30 in Paris
        for (extra, sent) in [
            (#","quiet_hours":{"from":"22:00","to":"07:00","action":"drop"}"#, false),
            (#","quiet_hours":{"from":"23:00","to":"07:00","action":"drop"}"#, true),
            (#","quiet_hours":false"#, true),
            (#","quiet_hours":"off""#, true),
        ] {
            let harness = try await EngagementHarness(try Self.config(campaign: extra))
            try await people(harness)
            harness.clock.set(at)
            try await harness.apply(opened(harness, ["paul"], at: at))
            #expect(try harness.sends().count == (sent ? 1 : 0), "\(extra)")
            #expect(try await timers(harness).isEmpty, "\(extra)")
            try await harness.advance(to: Self.utc("2026-11-19T12:00:00Z"))
            #expect(try harness.sends().count == (sent ? 1 : 0), "\(extra)")
        }
    }

    @Test("transactional sends are never held")
    func transactional() async throws {
        let harness = try await EngagementHarness(try Self.config(type: "transactional"))
        try await people(harness)
        let at = Self.utc("2026-11-18T21:30:00Z")
        harness.clock.set(at)
        try await harness.apply(opened(harness, ["paul", "anna"], at: at))
        #expect(try harness.sends().count == 2)
        #expect(try await timers(harness).isEmpty)
    }

    @Test("a held send that is no longer eligible at the window's end is not sent: left the audience, expired, cancelled, disabled")
    func ineligibleAtRelease() async throws {
        let at = Self.utc("2026-11-18T21:30:00Z")
        let release = Self.utc("2026-11-19T07:00:00Z")
        let vip = #"{"kind":"segment","id":"vip","project":"demo","condition":"c.vip = true"}"#

        // Left the audience while held.
        var harness = try await EngagementHarness(try Self.config(campaign: #","audience":"vip""#, segments: [vip]))
        try await people(harness)
        try await harness.apply([harness.writer.record(.profileUpdate, id: "v", fields: [
            JSONMember("profile", try JSONParser.parse(Array(#"{"custom_attributes":{"vip.b":true}}"#.utf8)))])])
        harness.clock.set(at)
        try await harness.apply(opened(harness, ["paul"], at: at))
        #expect(try await timers(harness).count == 1)
        try await harness.apply([harness.writer.record(.profileUpdate, id: "nv", at: at + 60, fields: [
            JSONMember("profile", try JSONParser.parse(Array(#"{"custom_attributes":{"vip.b":false}}"#.utf8)))])])
        #expect(try await harness.advance(to: release) == 1)
        #expect(try harness.sends().isEmpty)

        // Expired: held for 9.5 hours, the campaign expires after 3.
        harness = try await EngagementHarness(try Self.config(campaign: #","expires_after":"3h""#))
        try await people(harness)
        harness.clock.set(at)
        try await harness.apply(opened(harness, ["paul"], at: at))
        #expect(try await harness.advance(to: release) == 1)
        #expect(try harness.sends().isEmpty)

        // Cancelled: the delay ended in quiet hours, then the cancelling event came.
        harness = try await EngagementHarness(try Self.config(campaign: #","delay":"10m","cancel_on":["PURCHASED"]"#))
        try await people(harness)
        harness.clock.set(at)
        try await harness.apply(opened(harness, ["paul"], at: at))
        #expect(try await harness.advance(to: at + 600) == 1)
        #expect(try await timers(harness).count == 1)
        try await harness.apply([
            harness.writer.record(.event, id: "buy", at: at + 700,
                fields: [JSONMember("event", .object([JSONMember("name", .string("PURCHASED"))]))])
        ])
        #expect(try await timers(harness).isEmpty)
        #expect(try await harness.advance(to: release) == 0)
        #expect(try harness.sends().isEmpty)

        // Disabled while held.
        harness = try await EngagementHarness(try Self.config())
        try await people(harness)
        harness.clock.set(at)
        try await harness.apply(opened(harness, ["paul"], at: at))
        harness.rules = EngagementRules(
            config: try Self.config(campaign: #","enabled":false"#), clock: { [clock = harness.clock] in clock.now })
        #expect(try await harness.advance(to: release) == 1)
        #expect(try harness.sends().isEmpty)
    }

    @Test("b.timezone in segments: the profile's own, else its installation's, else the project's")
    func timeZoneInSegments() async throws {
        let harness = try await EngagementHarness(try Self.config(segments: [
            #"{"kind":"segment","id":"east","project":"demo","condition":"b.timezone = \"America/New_York\""}"#,
            #"{"kind":"segment","id":"tokyo","project":"demo","condition":"b.timezone = \"Asia/Tokyo\""}"#,
        ]))
        try await people(harness)
        #expect(try await harness.segments("demo/bob") == ["demo/east"])
        #expect(try await harness.segments("demo/anna") == ["demo/tokyo"])
        #expect(try await harness.segments("demo/paul") == [])
    }
}
