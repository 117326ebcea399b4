import Foundation
import GRDB
import HeraldTestSupport
import PartitionStore
import Shared
import Testing

@testable import OrchestratorDomain

/// A journey's `update` node (docs/journeys.md): its edit goes through the write path as the orchestrator's own
/// `journey_update` record to the profile, and the instance goes on once it is applied, so that what follows reads the
/// profile it made, segments follow it, and a replay applies it once.
@Suite("Journeys: update nodes", .serialized)
struct JourneyUpdateTests {
    static let objects = [
        demoProject,
        #"{"kind":"segment","id":"gold","project":"demo","condition":"c.plan = \"gold\""}"#,
        #"{"kind":"template","id":"hi","project":"demo","channel":"push","variants":{"default":{"body":"{{ c.plan }} {{ c.interests | join: '+' }}"}}}"#,
        #"{"kind":"template","id":"club","project":"demo","channel":"push","variants":{"default":{"body":"club"}}}"#,
        #"{"kind":"campaign","id":"gold-club","project":"demo","trigger":{"segment_entry":"gold"},"reeligibility":"once","messages":[{"channel":"push","template":"club"}]}"#,
        #"""
        {"kind":"journey","id":"upgrade","project":"demo","entry":{"event":"signed_up"},"start":"set",
         "nodes":{"set":{"update":{"attributes":{"plan":"gold","interests":{"$add":["trial"]}}},"next":"check"},
                  "check":{"split":{"branches":[{"condition":"c.plan = \"gold\"","next":"hi"}],"else":"done"}},
                  "hi":{"message":{"channel":"push","template":"hi"},"next":"done"},"done":{"exit":{}}}}
        """#,
    ]

    /// The records the partition produced to `herald.ingest` that are not applied yet, as the broker hands them back.
    func ownRecords(_ harness: EngagementHarness, after applied: inout Int) -> [KafkaRecord] {
        let records = harness.outbox.filter { $0.topic == HeraldTopic.ingest.name }
        defer { applied = records.count }
        return records.dropFirst(applied).map { record in
            defer { harness.writer.offset += 1 }
            return KafkaRecord(
                topic: record.topic, partition: 0, offset: harness.writer.offset, key: Array(record.key.utf8), value: record.value,
                headers: record.headers)
        }
    }

    @Test("the edit is applied through the write path, then the instance goes on: the split and the message read it, the segment's entry campaign fires, a replay applies it once")
    func updateThenRead() async throws {
        let harness = try await EngagementHarness(try configuration(Self.objects))
        try await harness.apply([
            try harness.writer.update(id: "1", #"{"plan":"free","interests":["shoes"]}"#),
            try harness.writer.event(id: "s", #"{"name":"signed_up"}"#),
        ])
        // Parked at the update node until its write comes back.
        #expect(try harness.sends().isEmpty)
        let at = try await harness.database.read { db in try String.fetchOne(db, sql: "SELECT node FROM journey_instances") }
        #expect(at == "set")
        var applied = 0
        let own = ownRecords(harness, after: &applied)
        #expect(own.count == 1)
        let record = try IngestRecord.read(try #require(own.first?.value))
        // The bytes `IngestGoldens.journeyUpdate` keeps.
        #expect("\(try #require(own.first?.keyString))\t\(String(decoding: record.value, as: UTF8.self))" == IngestGoldens.journeyUpdate)
        #expect(record.op == .journeyUpdate && record.source == .orchestrator && own.first?.keyString == "demo/paul")
        try await harness.apply(own)
        #expect(try harness.sends().map { "\($0.campaign) \($0.content["body"] ?? "")" } == ["gold-club club", "upgrade/hi gold shoes+trial"])
        #expect(try await harness.segments() == ["demo/gold"])
        // The same record again (a redelivery): nothing more.
        try await harness.apply([own[0]])
        #expect(try harness.sends().count == 2)
        let ended = try await harness.database.read { db in try String.fetchOne(db, sql: "SELECT ended FROM journey_instances") }
        #expect(ended == "completed done")
    }

    @Test("a profile erased before its update comes back is not made again")
    func erasedMeanwhile() async throws {
        let harness = try await EngagementHarness(try configuration(Self.objects))
        try await harness.apply([try harness.writer.event(id: "s", #"{"name":"signed_up"}"#)])
        var applied = 0
        let own = ownRecords(harness, after: &applied)
        try await harness.apply([harness.writer.record(.profileDelete, id: "d")])
        try await harness.apply(own)
        let profiles = try await harness.database.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM profiles") }
        #expect(profiles == 0)
        #expect(try harness.sends().isEmpty)
    }
}
