import Foundation
import GRDB
import HeraldTestSupport
import Ingest
import Shared
import Testing

@testable import PartitionStore
@testable import OrchestratorDomain

/// The `session` op's fields, as the ingest writes them.
func session(_ kind: String, _ id: String, at time: Date, duration: Double? = nil) -> [JSONMember] {
    var members = [
        JSONMember("kind", .string(kind)), JSONMember("session_id", .string(id)), JSONMember("time", .string(WireTime.format(time))),
    ]
    if let duration { members.append(JSONMember("duration", .number(JSONValue.literal(duration)))) }
    return [JSONMember("session", .object(members))]
}

/// The `push_open` op's fields.
func pushOpen(_ sendID: String, action: String? = nil, at time: Date = t0) -> [JSONMember] {
    var members = [JSONMember("send_id", .string(sendID))]
    if let action { members.append(JSONMember("action", .string(action))) }
    members.append(JSONMember("time", .string(WireTime.format(time))))
    return [JSONMember("push_open", .object(members))]
}

@Suite("An app's activity: sessions and notifications opened", .serialized)
struct AppActivityTests {
    /// Sessions reported late, twice and out of order, across an identification that moves the installation from its
    /// home to the profile (on another partition), under several interleavings of the partitions, with the moves
    /// delivered once or twice.
    @Test("sessions: counted once, lengths added, the one in progress kept; the count moves with the installation", arguments: [1, 2, 3, 4] as [UInt64])
    func sessions(seed: UInt64) async throws {
        let cluster = try Cluster(seed: seed)
        // Every move delivered twice (an outbox replayed): counted once all the same.
        cluster.duplicateOutputs = seed % 2 == 0
        let start = t0
        // Anonymous: s1 (60 s, measured by the app), then s2 starts.
        cluster.app(.session, "app:session_start:I:s1", installation: "I", session("start", "s1", at: start))
        cluster.app(.session, "app:session_end:I:s1", installation: "I", session("end", "s1", at: start + 61, duration: 60))
        cluster.app(.session, "app:session_start:I:s2", installation: "I", session("start", "s2", at: start + 100))
        // The same start again (a retried flush): one session.
        cluster.app(.session, "app:session_start:I:s2", installation: "I", session("start", "s2", at: start + 100))
        try await cluster.settle()
        // Logged in: the installation and its sessions move to paul's profile.
        cluster.app(.identify, "i1", installation: "I", customID: "paul")
        try await cluster.settle()
        // s2 ends at the profile without a measured length: end − start. Then s3 starts, and a late report of an older
        // session s0 (start and end with its length) arrives.
        cluster.app(.session, "app:session_end:I:s2", installation: "I", customID: "paul", session("end", "s2", at: start + 130))
        cluster.app(.session, "app:session_start:I:s3", installation: "I", customID: "paul", session("start", "s3", at: start + 500))
        cluster.app(.session, "app:session_start:I:s0", installation: "I", customID: "paul", session("start", "s0", at: start - 3600))
        cluster.app(.session, "app:session_end:I:s0", installation: "I", customID: "paul", session("end", "s0", at: start - 3590, duration: 10))
        try await cluster.settle()
        let paul = try #require(try await cluster.profile("demo/paul"))
        let native = try #require(paul["native"])
        #expect(native["b.session_count"] == .number("4"))
        #expect(native["b.session_seconds"] == .number("100.0"))  // 60 + 30 + 10
        #expect(native["b.first_session_date"] == .string(WireTime.format(start - 3600)))
        #expect(native["b.last_session_date"] == .string(WireTime.format(start + 500)))
        let installation = try #require(paul["installations"]?[0])
        #expect(installation["session_in_progress"]?["session_id"] == .string("s3"))
        #expect(try await cluster.holders("I") == ["demo/paul"])
        #expect(cluster.deadLetters.isEmpty, "\(cluster.deadLetters.map(\.reason))")
    }

    @Test("segments read the session natives; a session start triggers its campaigns, not a late or a repeated one")
    func sessionStartTrigger() async throws {
        let config = try configuration(
            demoProject,
            #"{"kind":"segment","id":"regular","project":"demo","condition":"b.session_count >= 2"}"#,
            #"{"kind":"template","id":"hello","project":"demo","channel":"push","variants":{"default":{"body":"Welcome back ({{ event.app }})"}}}"#,
            #"{"kind":"campaign","id":"welcome-back","project":"demo","type":"transactional","trigger":{"session_start":true,"where":"event.app = \"ios\""},"reeligibility":"always","messages":[{"channel":"push","template":"hello"}]}"#,
            #"{"kind":"campaign","id":"other-app","project":"demo","type":"transactional","trigger":{"session_start":true,"where":"event.app = \"android\""},"reeligibility":"always","messages":[{"channel":"push","template":"hello"}]}"#)
        let harness = try await EngagementHarness(config)
        harness.writer.source = .app(id: "ios", dev: false)
        func start(_ id: String, at time: Date) -> KafkaRecord {
            harness.writer.record(.session, id: "app:session_start:I:\(id)", installationID: "I", at: t0, fields: session("start", id, at: time))
        }
        try await harness.apply([start("s1", at: t0)])
        #expect(try harness.sends().map { $0.content["body"] } == ["Welcome back (ios)"])
        #expect(try harness.sends().first?.occurrence == "session I s1")
        #expect(try await harness.segments() == [])
        // Replayed (the same record id), then an older session reported late: neither greets the user.
        try await harness.apply([start("s1", at: t0), start("s0", at: t0 - 86_400)])
        #expect(try harness.sends().count == 1)
        #expect(try await harness.segments() == ["demo/regular"])
        try await harness.apply([start("s2", at: t0 + 60)])
        #expect(try harness.sends().count == 2)
    }

    /// Records a push delivered to installation `installation` of paul (the notifier's `sent` report).
    static func delivered(_ harness: EngagementHarness, send: String, installation: String, campaign: String = "promo") async throws {
        var report = DeliveryReport(
            id: "\(send)/\(installation)/sent", sendID: send, project: "demo", customID: "paul", installationID: installation,
            channel: .push, outcome: .sent, at: t0)
        report.campaign = campaign
        try await harness.apply([
            KafkaRecord(
                topic: HeraldTopic.deliveries.name, partition: 0, offset: 1_000 + harness.writer.offset, key: Array("demo/paul".utf8),
                value: try Wire.encode(report))
        ])
    }

    @Test("a notification opened: counted only for a push delivered to that installation; an opened or clicked report, and the push_open trigger")
    func pushOpens() async throws {
        let config = try configuration(
            demoProject,
            #"{"kind":"template","id":"thanks","project":"demo","channel":"push","variants":{"default":{"body":"You chose {{ event.action | default: \"nothing\" }} in {{ event.campaign }}"}}}"#,
            #"{"kind":"campaign","id":"follow-up","project":"demo","type":"transactional","trigger":{"push_open":true,"where":"event.campaign = \"promo\""},"reeligibility":"always","messages":[{"channel":"push","template":"thanks"}]}"#)
        let harness = try await EngagementHarness(config)
        harness.writer.source = .app(id: "ios", dev: false)
        func open(_ send: String, action: String? = nil, installation: String = "I") -> KafkaRecord {
            harness.writer.record(
                .pushOpen, id: "app:push_open:\(installation):\(send)\(action.map { ":\($0)" } ?? "")", installationID: installation,
                fields: pushOpen(send, action: action, at: t0 + 5))
        }
        // Paul has two installations; the push was delivered to I only.
        try await harness.apply([
            harness.writer.record(.identify, id: "i1", installationID: "I"), harness.writer.record(.identify, id: "i2", installationID: "J"),
        ])
        try await Self.delivered(harness, send: "S", installation: "I")
        // Opened, a button pressed; then another device (not delivered to), an unknown send, the same push opened
        // again and another of its buttons: none of those counts.
        try await harness.apply([
            open("S"), open("S", action: "BUY"), open("S", installation: "J"), open("unknown"),
            harness.writer.record(.pushOpen, id: "again", installationID: "I", fields: pushOpen("S", at: t0 + 9)),
            open("S", action: "LATER"),
        ])
        let reports = try harness.outbox.filter { $0.topic == HeraldTopic.deliveries.name }.map {
            try Wire.decode(DeliveryReport.self, from: $0.value ?? [])
        }
        #expect(reports.map(\.outcome) == [.opened, .clicked])
        #expect(reports.map(\.id) == ["S/I/opened", "S/I/clicked"])
        #expect(reports.allSatisfy { $0.campaign == "promo" && $0.sendID == "S" && $0.installationID == "I" && $0.key == "demo/paul" })
        #expect(reports.last?.action == "BUY")
        #expect(reports.first?.at == t0 + 5)
        #expect(try harness.sends().map { $0.content["body"] } == ["You chose nothing in promo", "You chose BUY in promo"])
        // A push of another campaign opened: reported, but the follow-up's condition does not hold.
        try await Self.delivered(harness, send: "T", installation: "I", campaign: "other")
        try await harness.apply([open("T")])
        #expect(harness.outbox.filter { $0.topic == HeraldTopic.deliveries.name }.count == 3)
        #expect(try harness.sends().count == 2)
    }

    /// An `install_move` written by an orchestrator before sessions were counted (a rolling upgrade, or a topic
    /// replayed): it carries no session column, and the row's NOT NULL counts take 0 (the insert failed without it).
    @Test("an install_move written before sessions were counted still applies, onto no row and onto a row with sessions")
    func oldMove() async throws {
        let sessionColumns =
            #""session_count":0,"session_seconds":0.0,"first_session_at":null,"last_session_at":null,"open_session_id":null,"open_session_at":null,"#
        let line = try #require(IngestGoldens.orchestrator.split(separator: "\n").first { $0.contains(#""id":"a6 link move""#) })
        let value = String(line.split(separator: "\t")[1]).replacingOccurrences(of: sessionColumns, with: "")
        #expect(!value.contains("session"))
        let old = try IngestRecord.read(Array(value.utf8))
        let harness = try await EngagementHarness(HeraldConfiguration())
        try await harness.apply([harness.writer.record(old)])
        #expect(try await harness.database.read { db in
            try String.fetchOne(db, sql: "SELECT session_count || ' ' || session_seconds FROM installations WHERE profile_key = 'demo/paul'")
        } == "0 0.0")
        // Onto a row that counted a session since: the count stays.
        harness.writer.source = .app(id: "ios", dev: false)
        try await harness.apply([
            harness.writer.record(.session, id: "s", installationID: "i-1", fields: session("start", "s1", at: t0)),
            harness.writer.record(IngestRecord(
                old.payload, id: "again", project: "demo", source: .orchestrator, customID: "paul", installationID: "i-1",
                receivedAt: t0)),
        ])
        #expect(try await harness.database.read { db in
            try Int.fetchOne(db, sql: "SELECT session_count FROM installations WHERE profile_key = 'demo/paul'")
        } == 1)
        #expect(harness.deadLetters.isEmpty)
    }

    @Test("only an app reports sessions and opens: the same op from a server is a dead letter (braze-rules 23)")
    func serverCannotReport() async throws {
        let config = try configuration(
            demoProject,
            #"{"kind":"template","id":"hello","project":"demo","channel":"push","variants":{"default":{"body":"Hi"}}}"#,
            #"{"kind":"campaign","id":"welcome-back","project":"demo","type":"transactional","trigger":{"session_start":true},"reeligibility":"always","messages":[{"channel":"push","template":"hello"}]}"#)
        let harness = try await EngagementHarness(config)
        try await harness.apply([
            harness.writer.record(.session, id: "s", installationID: "I", fields: session("start", "s1", at: t0)),
            harness.writer.record(.pushOpen, id: "o", installationID: "I", fields: pushOpen("S")),
        ])
        #expect(try harness.sends().isEmpty)
        #expect(harness.deadLetters.map(\.reason) == [
            "session from server: only an app reports it", "push_open from server: only an app reports it",
        ])
    }
}
