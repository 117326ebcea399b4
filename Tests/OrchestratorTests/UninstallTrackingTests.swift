import Foundation
import GRDB
import HeraldTestSupport
import PartitionStore
import Shared
import Testing

@testable import OrchestratorDomain

/// Uninstall tracking (issue 36, item 5): a daily silent push to each installation of an app that opts in, spread over
/// the day; a dead token becomes an UNINSTALL event on the profile, segmentable and a trigger.
@Suite("Uninstall tracking", .serialized)
struct UninstallTrackingTests {
    static let objects = [
        demoProject,
        #"{"kind":"app","id":"demo-ios","project":"demo","platform":"ios","uninstall_tracking":true}"#,
        #"{"kind":"app","id":"demo-android","project":"demo","platform":"android"}"#,
        #"{"kind":"segment","id":"gone","project":"demo","condition":"e.UNINSTALL.count >= 1"}"#,
        #"{"kind":"template","id":"miss-you","project":"demo","channel":"email","variants":{"default":{"subject":"We miss you","text":"Come back"}}}"#,
        #"{"kind":"campaign","id":"win-back","project":"demo","type":"transactional","trigger":{"event":"UNINSTALL"},"reeligibility":"always","messages":[{"channel":"email","template":"miss-you"}]}"#,
        #"{"kind":"template","id":"hello","project":"demo","channel":"push","variants":{"default":{"body":"Hello"}}}"#,
        #"{"kind":"campaign","id":"promo","project":"demo","type":"transactional","trigger":{"event":"PROMO"},"reeligibility":"always","messages":[{"channel":"push","template":"hello"}]}"#,
    ]

    /// Paul's iPhone (its app tracks uninstalls) and Anna's Android phone (its app does not), each with a token.
    static func registered(_ harness: EngagementHarness) async throws {
        harness.writer.source = .app(id: "demo-ios", dev: false)
        try await harness.apply([
            try harness.writer.update(id: "p", #"{"$email_address":"paul@example.com"}"#),
            harness.writer.record(.pushToken, id: "t1", customID: "paul", installationID: "I", fields: push(tokenA)),
        ])
        harness.writer.source = .app(id: "demo-android", dev: false)
        try await harness.apply([
            harness.writer.record(.pushToken, id: "t2", customID: "anna", installationID: "J", fields: push(String(repeating: "b2", count: 32))),
        ])
        harness.writer.source = .server
    }

    static func timers(_ harness: EngagementHarness) async throws -> [String: String] {
        try await harness.database.read { db in
            Dictionary(uniqueKeysWithValues: try Row.fetchAll(db, sql: "SELECT ref, due_at FROM timers WHERE kind = 'uninstall'").map {
                ($0["ref"] as String, $0["due_at"] as String)
            })
        }
    }

    @Test("a silent push a day at the installation's own time, only for an app that opts in, while it has a token")
    func probes() async throws {
        let harness = try await EngagementHarness(try configuration(Self.objects))
        try await Self.registered(harness)
        let first = UninstallTracking.nextProbe(installationID: "I", after: t0)
        let timers = try await Self.timers(harness)
        #expect(timers == ["I": WireTime.format(first)], "Anna's app does not track uninstalls")
        #expect(first > t0 && first <= t0 + 86_400)
        // Spread over the day: 1,000 installations' times of day cover it.
        let seconds = (0..<1000).map { Int(UninstallTracking.nextProbe(installationID: "i\($0)", after: t0).timeIntervalSince1970) % 86_400 }
        #expect(Set(seconds.map { $0 / 3600 }).count == 24)

        // The app sends its token again at a launch just after the probe's time, before the timer ran: the probe stays
        // where it is (moved to the next day, this day's would be lost).
        harness.writer.source = .app(id: "demo-ios", dev: false)
        try await harness.apply([harness.writer.record(.pushToken, id: "t1-again", customID: "paul", installationID: "I", at: first + 30, fields: push(tokenA))])
        harness.writer.source = .server
        let unmoved = try await Self.timers(harness)
        #expect(unmoved == ["I": WireTime.format(first)])

        try await harness.advance(to: first)
        let probe = try #require(try harness.sends().last)
        #expect(try harness.sends().count == 1)
        #expect(probe.campaign == UninstallTracking.campaign && probe.isSilentSignal && !probe.marketing)
        #expect(probe.installationID == "I" && probe.app == "demo-ios" && probe.profileKey == "demo/paul")
        #expect(probe.content["push_type"] == "background" && probe.payload?["herald_uninstall_tracking"] == .bool(true))
        // The next one a day later, and again.
        let next = try await Self.timers(harness)
        #expect(next == ["I": WireTime.format(first + 86_400)])
        try await harness.advance(to: first + 86_400)
        #expect(try harness.sends().count == 2 && Set(try harness.sends().map(\.sendID)).count == 2)
        // The token gone (the provider said so): no probe, and no next one.
        try await harness.apply([try Self.deadToken(harness, probe, tokenA, "I", offset: 0)])
        try await harness.advance(to: first + 2 * 86_400)
        let left = try await Self.timers(harness)
        #expect(try harness.sends().count == 2 && left.isEmpty)
    }

    /// The notifier's report that the installation's token is dead, answering `send`.
    static func deadToken(_ harness: EngagementHarness, _ send: SendRequest, _ token: String, _ installation: String, offset: Int64) throws -> KafkaRecord {
        var report = DeliveryReport(
            id: "\(send.sendID)/\(installation)/token_invalid", sendID: send.sendID, project: "demo", customID: send.customID,
            installationID: installation, channel: .push, outcome: .tokenInvalid, token: token, at: t0 + 60)
        report.campaign = send.campaign
        report.profileKey = send.profileKey
        return KafkaRecord(
            topic: HeraldTopic.deliveries.name, partition: 0, offset: 1_000 + offset + harness.writer.offset,
            key: Array(send.profileKey.utf8), value: try Wire.encode(report))
    }

    @Test("a dead token of a tracking app is an UNINSTALL event at the answer's time: a segment's member, a trigger; once; not for other apps")
    func uninstalls() async throws {
        let harness = try await EngagementHarness(try configuration(Self.objects))
        try await Self.registered(harness)
        try await harness.apply([
            harness.writer.record(.event, id: "promo-1", customID: "paul", fields: event("PROMO")),
            harness.writer.record(.event, id: "promo-2", customID: "anna", fields: event("PROMO")),
        ])
        let pushes = try harness.sends()
        #expect(pushes.count == 2)
        // The providers' answers: both tokens are dead.
        let records = try [
            (pushes[0], tokenA, "I"), (pushes[1], String(repeating: "b2", count: 32), "J"), (pushes[0], tokenA, "I"),
        ].enumerated().map { index, answer in try Self.deadToken(harness, answer.0, answer.1, answer.2, offset: Int64(index)) }
        try await harness.apply(records)
        let events = try await harness.database.read { db in
            try Row.fetchAll(db, sql: "SELECT profile_key, count, last_at FROM event_aggregates WHERE name = 'UNINSTALL'").map {
                ($0["profile_key"] as String, $0["count"] as Int, $0["last_at"] as String)
            }
        }
        #expect(events.count == 1 && events.first?.0 == "demo/paul" && events.first?.1 == 1, "\(events)")
        #expect(events.first?.2 == WireTime.format(t0 + 60))
        let (paul, anna) = (try await harness.segments("demo/paul"), try await harness.segments("demo/anna"))
        #expect(paul == ["demo/gone"] && anna == [])
        // The win-back email, once; both tokens removed as for any app.
        #expect(try harness.sends(.email).map(\.profileKey) == ["demo/paul"])
        let tokens = try await harness.database.read { db in try String?.fetchAll(db, sql: "SELECT token FROM installations ORDER BY installation_id") }
        #expect(tokens == [nil, nil])
    }
}
