import Foundation
import GRDB
import Ingest
import Shared
import Testing

@testable import OrchestratorDomain
@testable import PartitionStore

/// Scheduled campaigns at 09:00 in each member's own time zone (issue 21), with an injected clock.
@Suite("Campaign timing: local-time schedules", .serialized)
struct LocalScheduleTests {
    static func utc(_ text: String) -> Date { WireTime.parse(text)! }

    /// UTC−10 … UTC+14, and each one's 09:00 on 2026-12-01.
    static let zones: [(name: String, nine: String)] = [
        ("Pacific/Honolulu", "2026-12-01T19:00:00Z"), ("America/New_York", "2026-12-01T14:00:00Z"),
        ("UTC", "2026-12-01T09:00:00Z"), ("Europe/Paris", "2026-12-01T08:00:00Z"),
        ("Asia/Kolkata", "2026-12-01T03:30:00Z"), ("Asia/Tokyo", "2026-12-01T00:00:00Z"),
        ("Pacific/Kiritimati", "2026-11-30T19:00:00Z"),
    ]

    static func config(_ schedule: String) throws -> HeraldConfiguration {
        try configuration(
            #"{"kind":"project","id":"demo"}"#,
            #"{"kind":"segment","id":"members","project":"demo","condition":"c.member = true"}"#,
            #"{"kind":"template","id":"hi","project":"demo","channel":"sms","variants":{"default":{"text":"Good morning"}}}"#,
            #"{"kind":"campaign","id":"morning","project":"demo","type":"transactional","trigger":{"schedule":\#(schedule)},"audience":"members","reeligibility":"always","messages":[{"channel":"sms","template":"hi"}]}"#)
    }

    /// A member per zone, named after it, with the zone as `$timezone`.
    func members(_ harness: EngagementHarness, _ zones: [String]) async throws {
        try await harness.apply(try zones.map { zone in
            let (edit, problems) = ProfileValidation.validate(
                try JSONParser.parse(Array(#"{"$timezone":"\#(zone)","member":true}"#.utf8)), path: "a", identified: true)
            precondition(problems.isEmpty, "\(problems)")
            return harness.writer.record(.profileUpdate, id: "m-\(zone)", customID: zone, fields: [JSONMember("profile", edit.json)])
        })
    }

    /// When each member's sends leave: decided ahead of their time, they carry it (`not_before`).
    func released(_ harness: EngagementHarness) throws -> [String: [Date]] {
        var by: [String: [Date]] = [:]
        for send in try harness.sends(.sms) { by[send.customID ?? "", default: []].append(send.notBefore ?? send.decidedAt) }
        return by
    }

    @Test("09:00 local from UTC−10 to UTC+14: each member at their 09:00, one timer per instant, none twice after a restart")
    func eachAtTheirNine() async throws {
        let harness = try await EngagementHarness(try Self.config(#"{"at":"09:00","timezone":"local","on":"2026-12-01"}"#))
        try await members(harness, Self.zones.map(\.name))
        _ = try await OrchestratorPartition(harness.database).reconcile(rules: harness.rules)
        // Prepared an hour before the first 09:00 anywhere (UTC+14).
        #expect(try await harness.advance(to: Self.utc("2026-11-30T17:59:59Z")) == 0)
        #expect(try await harness.advance(to: Self.utc("2026-11-30T18:00:00Z")) == 1)
        let timers = try await harness.database.read { db in
            try Int.fetchOne(db, sql: "SELECT count(*) FROM timers WHERE kind = 'local'")
        }
        #expect(timers == Self.zones.count)
        // Each released a minute (and a millisecond for its one member) ahead, its send held until its 09:00.
        for (index, zone) in Self.zones.reversed().enumerated() {
            let nine = Self.utc(zone.nine)
            #expect(try await harness.advance(to: nine - 60.002) == 0, "\(zone.name)")
            if index == 3 { try harness.reopen() }
            #expect(try await harness.advance(to: nine - 60.001) == 1, "\(zone.name)")
            #expect(try released(harness)[zone.name] == [nine], "\(zone.name)")
            let decided = try #require(try harness.sends(.sms).last?.decidedAt)
            #expect(abs(decided.timeIntervalSince(nine - 60.001)) < 0.0005, "decided at \(WireTime.format(decided))")
        }
        try harness.reopen()
        #expect(try await harness.advance(to: Self.utc("2026-12-03T00:00:00Z")) == 0)
        let all = try released(harness)
        #expect(all.count == Self.zones.count && all.values.allSatisfy { $0.count == 1 })
        let left = try await harness.database.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM local_sends") }
        #expect(left == 0)
    }

    @Test("started late: a member whose 09:00 has passed gets the next day's 09:00, or nothing with missed: skip")
    func missed() async throws {
        for (missed, expected) in [("next", ["Asia/Tokyo": [Self.utc("2026-12-02T00:00:00Z")], "Europe/Paris": [Self.utc("2026-12-01T08:00:00Z")]]),
                                   ("skip", ["Europe/Paris": [Self.utc("2026-12-01T08:00:00Z")]])] {
            let harness = try await EngagementHarness(
                try Self.config(#"{"at":"09:00","timezone":"local","on":"2026-12-01","missed":"\#(missed)"}"#))
            try await members(harness, ["Asia/Tokyo", "Europe/Paris"])
            // Applied at 05:00 UTC: 14:00 in Tokyo, 06:00 in Paris.
            harness.clock.set(Self.utc("2026-12-01T05:00:00Z"))
            _ = try await OrchestratorPartition(harness.database).reconcile(rules: harness.rules)
            #expect(try await harness.advance(to: Self.utc("2026-12-01T05:00:00Z")) == 1)
            try await harness.advance(to: Self.utc("2026-12-01T08:00:00Z"))
            try await harness.advance(to: Self.utc("2026-12-02T00:00:00Z"))
            try await harness.advance(to: Self.utc("2026-12-03T00:00:00Z"))
            #expect(try released(harness) == expected, "\(missed)")
        }
    }

    @Test("every day: each member once a day at their 09:00; a fixed zone sends to everyone at its 09:00")
    func recurringAndFixedZone() async throws {
        var harness = try await EngagementHarness(try Self.config(#"{"at":"09:00","timezone":"local","on":"2026-12-01","every":"1d"}"#))
        try await members(harness, ["Asia/Tokyo", "America/New_York"])
        _ = try await OrchestratorPartition(harness.database).reconcile(rules: harness.rules)
        var clock = Self.utc("2026-11-30T00:00:00Z")
        while clock < Self.utc("2026-12-03T12:00:00Z") {
            clock += 15 * 60
            while try await harness.advance(to: clock) > 0 {}
        }
        #expect(try released(harness) == [
            "Asia/Tokyo": ["2026-12-01T00:00:00Z", "2026-12-02T00:00:00Z", "2026-12-03T00:00:00Z"].map(Self.utc),
            "America/New_York": ["2026-12-01T14:00:00Z", "2026-12-02T14:00:00Z"].map(Self.utc),
        ])

        harness = try await EngagementHarness(try Self.config(#"{"at":"09:00","timezone":"Asia/Tokyo","on":"2026-12-01"}"#))
        try await members(harness, ["Asia/Tokyo", "America/New_York"])
        _ = try await OrchestratorPartition(harness.database).reconcile(rules: harness.rules)
        try await harness.advance(to: Self.utc("2026-11-30T23:00:00Z"))
        try await harness.advance(to: Self.utc("2026-12-01T00:00:00Z"))
        #expect(try released(harness) == ["Asia/Tokyo": [Self.utc("2026-12-01T00:00:00Z")], "America/New_York": [Self.utc("2026-12-01T00:00:00Z")]])
    }

    @Test("02:30 on the spring-forward day in Paris is released when the clocks jump to 03:00")
    func springForward() async throws {
        let harness = try await EngagementHarness(try Self.config(#"{"at":"02:30","timezone":"local","on":"2026-03-29"}"#))
        harness.clock.set(Self.utc("2026-03-01T00:00:00Z"))
        try await members(harness, ["Europe/Paris"])
        _ = try await OrchestratorPartition(harness.database).reconcile(rules: harness.rules)
        try await harness.advance(to: Self.utc("2026-03-28T12:00:00Z"))
        #expect(try await harness.advance(to: Self.utc("2026-03-29T00:58:59Z")) == 0)
        #expect(try await harness.advance(to: Self.utc("2026-03-29T01:00:00Z")) == 1)
        #expect(try released(harness) == ["Europe/Paris": [Self.utc("2026-03-29T01:00:00Z")]])
    }

    @Test("a member without a time zone of its own: its latest installation's, else the project's")
    func installationAndProjectZones() async throws {
        let config = try configuration(
            #"{"kind":"project","id":"demo","timezone":"America/New_York"}"#,
            #"{"kind":"segment","id":"members","project":"demo","condition":"c.member = true"}"#,
            #"{"kind":"template","id":"hi","project":"demo","channel":"sms","variants":{"default":{"text":"Good morning"}}}"#,
            #"{"kind":"campaign","id":"morning","project":"demo","type":"transactional","trigger":{"schedule":{"at":"09:00","timezone":"local","on":"2026-12-01"}},"audience":"members","reeligibility":"always","messages":[{"channel":"sms","template":"hi"}]}"#)
        let harness = try await EngagementHarness(config)
        let member = try JSONParser.parse(Array(#"{"custom_attributes":{"member.b":true}}"#.utf8))
        try await harness.apply([
            harness.writer.record(.profileUpdate, id: "a", customID: "anna", fields: [JSONMember("profile", member)]),
            harness.writer.record(.profileUpdate, id: "b", customID: "bob", fields: [JSONMember("profile", member)]),
        ])
        harness.writer.source = .app(id: "ios", dev: false)
        try await harness.apply([
            harness.writer.record(.installation, id: "i1", customID: "anna", installationID: "A-OLD", at: t0,
                fields: installationFields([JSONMember("timezone", .string("Europe/Paris"))])),
            harness.writer.record(.installation, id: "i2", customID: "anna", installationID: "A-NEW", at: t0 + 60,
                fields: installationFields([JSONMember("timezone", .string("Asia/Tokyo"))])),
        ])
        _ = try await OrchestratorPartition(harness.database).reconcile(rules: harness.rules)
        try await harness.advance(to: Self.utc("2026-11-30T18:00:00Z"))
        try await harness.advance(to: Self.utc("2026-12-01T00:00:00Z"))
        try await harness.advance(to: Self.utc("2026-12-01T14:00:00Z"))
        #expect(try released(harness) == ["anna": [Self.utc("2026-12-01T00:00:00Z")], "bob": [Self.utc("2026-12-01T14:00:00Z")]])
    }

    @Test("a large audience is prepared and released a page per transaction")
    func paged() async throws {
        let harness = try await EngagementHarness(try Self.config(#"{"at":"09:00","timezone":"local","on":"2026-12-01"}"#))
        let count = ScheduledRuns.page + 10
        try await harness.apply(try (0..<count).map { index in
            let (edit, _) = ProfileValidation.validate(
                try JSONParser.parse(Array(#"{"$timezone":"Asia/Tokyo","member":true}"#.utf8)), path: "a", identified: true)
            return harness.writer.record(.profileUpdate, id: "p\(index)", customID: "u\(index)", fields: [JSONMember("profile", edit.json)])
        })
        _ = try await OrchestratorPartition(harness.database).reconcile(rules: harness.rules)
        #expect(try await harness.advance(to: Self.utc("2026-11-30T18:00:00Z")) == 1)  // the first page
        #expect(try await harness.advance(to: Self.utc("2026-11-30T18:00:01Z")) == 1)  // the rest
        #expect(try await harness.advance(to: Self.utc("2026-12-01T00:00:00Z")) == 1)
        #expect(try harness.sends(.sms).count == ScheduledRuns.page)
        #expect(try await harness.advance(to: Self.utc("2026-12-01T00:00:01Z")) == 1)
        let sends = try harness.sends(.sms)
        #expect(sends.count == count && Set(sends.map(\.profileKey)).count == count)
    }
}
