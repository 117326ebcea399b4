import Foundation
import GRDB
import Shared
import Testing

@testable import OrchestratorDomain
@testable import PartitionStore

/// Frequency caps per profile, counted from decisions and settled by the notifier's reports (issue 21).
@Suite("Campaign timing: frequency caps", .serialized)
struct FrequencyCapTests {
    static let templates = [
        #"{"kind":"template","id":"hi","project":"demo","channel":"push","variants":{"default":{"body":"Hi"}}}"#,
        #"{"kind":"template","id":"mail","project":"demo","channel":"email","variants":{"default":{"subject":"Hi","text":"Hi"}}}"#,
    ]

    static func campaign(_ id: String, channel: String = "push", extra: String = "") -> String {
        let template = channel == "push" ? "hi" : "mail"
        return #"{"kind":"campaign","id":"\#(id)","project":"demo","trigger":{"event":"OPENED"},"reeligibility":"always","messages":[{"channel":"\#(channel)","template":"\#(template)"}]\#(extra)}"#
    }

    static func config(caps: String, _ campaigns: [String]) throws -> HeraldConfiguration {
        try configuration([#"{"kind":"project","id":"demo","frequency_caps":\#(caps)}"#] + templates + campaigns)
    }

    func open(_ harness: EngagementHarness, at: Date) async throws {
        harness.clock.set(at)
        try await harness.apply([
            harness.writer.record(
                .event, id: "o-\(at.timeIntervalSince1970)", at: at,
                fields: [JSONMember("event", .object([JSONMember("name", .string("OPENED"))]))])
        ])
    }

    func sent(_ harness: EngagementHarness) throws -> Int { try harness.sends(.push).count + harness.sends(.email).count }

    @Test("at the boundary: the 3rd send in 24 h passes, the 4th is capped, one 24 h + 1 ms after the first passes")
    func boundary() async throws {
        let harness = try await EngagementHarness(try Self.config(caps: #"[{"max":3,"per":"24h","channel":"push"}]"#, [Self.campaign("news")]))
        for hours in 0..<3 { try await open(harness, at: t0 + Double(hours) * 3600) }
        #expect(try sent(harness) == 3)
        try await open(harness, at: t0 + 3 * 3600)
        #expect(try sent(harness) == 3)
        try await open(harness, at: t0 + 86_400 - 0.001)
        #expect(try sent(harness) == 3)
        try await open(harness, at: t0 + 86_400 + 0.001)
        #expect(try sent(harness) == 4)
    }

    @Test("two campaigns deciding at once cannot both take the last slot; a channel's cap leaves other channels alone")
    func lastSlot() async throws {
        var harness = try await EngagementHarness(try Self.config(caps: #"[{"max":1,"per":"1d"}]"#, [
            Self.campaign("first"), Self.campaign("second", channel: "email"),
        ]))
        try await open(harness, at: t0)
        #expect(try harness.sends(.push).count == 1 && harness.sends(.email).isEmpty)

        harness = try await EngagementHarness(try Self.config(caps: #"[{"max":1,"per":"1d","channel":"push"}]"#, [
            Self.campaign("first"), Self.campaign("second"), Self.campaign("mail", channel: "email"),
        ]))
        try await open(harness, at: t0)
        #expect(try harness.sends(.push).count == 1 && harness.sends(.email).count == 1)
    }

    @Test("transactional campaigns are neither capped nor counted; ignore_frequency_cap passes but counts")
    func exempt() async throws {
        var harness = try await EngagementHarness(try Self.config(caps: #"[{"max":1,"per":"1d"}]"#, [
            Self.campaign("a-receipt", extra: #","type":"transactional""#), Self.campaign("b-news"),
        ]))
        try await open(harness, at: t0)
        try await open(harness, at: t0 + 60)
        // The receipt twice; the news once (the receipt did not take its slot).
        #expect(try harness.sends(.push).map(\.campaign) == ["a-receipt", "b-news", "a-receipt"])

        harness = try await EngagementHarness(try Self.config(caps: #"[{"max":1,"per":"1d"}]"#, [
            Self.campaign("a-alert", extra: #","ignore_frequency_cap":true"#), Self.campaign("b-news"),
        ]))
        try await open(harness, at: t0)
        try await open(harness, at: t0 + 60)
        #expect(try harness.sends(.push).map(\.campaign) == ["a-alert", "a-alert"])
    }

    func report(_ harness: EngagementHarness, sendID: String, _ outcome: DeliveryReport.Outcome, at: Date) async throws {
        var report = DeliveryReport(
            id: "r-\(sendID)-\(outcome.rawValue)", sendID: sendID, project: "demo", customID: "paul", installationID: "I",
            channel: .push, outcome: outcome, at: at)
        report.profileKey = "demo/paul"
        harness.writer.offset += 1
        try await harness.apply([
            KafkaRecord(
                topic: HeraldTopic.deliveries.name, partition: 0, offset: harness.writer.offset,
                key: Array("demo/paul".utf8), value: try Wire.encode(report))
        ])
    }

    @Test("a send reported not made frees its slot; one reported made keeps it, even after another target failed")
    func settledByReports() async throws {
        let harness = try await EngagementHarness(try Self.config(caps: #"[{"max":1,"per":"1d"}]"#, [Self.campaign("news")]))
        try await open(harness, at: t0)
        let first = try #require(try harness.sends().first)
        try await report(harness, sendID: first.sendID, .suppressed, at: t0 + 1)
        try await open(harness, at: t0 + 60)
        #expect(try sent(harness) == 2)
        let second = try #require(try harness.sends().last)
        try await report(harness, sendID: second.sendID, .sent, at: t0 + 61)
        try await report(harness, sendID: second.sendID, .failed, at: t0 + 62)
        try await open(harness, at: t0 + 120)
        #expect(try sent(harness) == 2)
    }

    @Test("the log is kept as long as the longest cap")
    func retention() async throws {
        let harness = try await EngagementHarness(try Self.config(caps: #"[{"max":5,"per":"2d"},{"max":9,"per":"7d"}]"#, [Self.campaign("news")]))
        try await open(harness, at: t0)
        try await open(harness, at: t0 + 3 * 86_400)
        #expect(try await OrchestratorRetention.pruneFrequencyLog(harness.database, rules: harness.rules, now: t0 + 7 * 86_400 + 1) == 1)
        #expect(try await OrchestratorRetention.pruneFrequencyLog(harness.database, rules: harness.rules, now: t0 + 7 * 86_400 + 1) == 0)
        #expect(try await harness.database.read { try Int.fetchOne($0, sql: "SELECT count(*) FROM frequency_log") } == 1)
    }
}
