import Foundation
import GRDB
import HeraldTestSupport
import Ingest
import Shared
import Testing

@testable import Orchestrator
@testable import PartitionStore
@testable import OrchestratorDomain

/// A fresh partition database in a temporary directory.
func temporaryDirectory() -> String {
    let path = FileManager.default.temporaryDirectory.appendingPathComponent("herald-orch-\(UUID().uuidString)").path
    try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    return path
}

let t0 = Date(timeIntervalSince1970: 1_795_000_000)

/// Builds the `herald.ingest` record the ingest would write, at an offset.
struct Writer {
    var offset: Int64 = 0
    var partition: Int32 = 0
    var source: IngestSource = .server

    mutating func record(
        _ op: IngestOp, id: String, customID: String? = "paul", installationID: String? = nil, at: Date = t0,
        fields: [JSONMember] = []
    ) -> KafkaRecord {
        record(
            IngestRecord(
                op: op, id: id, project: "demo", source: source, customID: customID, installationID: installationID,
                receivedAt: at, fields: fields))
    }

    /// The next record of the partition, holding `ingest`.
    mutating func record(_ ingest: IngestRecord) -> KafkaRecord {
        defer { offset += 1 }
        return KafkaRecord(
            topic: HeraldTopic.ingest.name, partition: partition, offset: offset, key: Array(ingest.key.utf8),
            value: ingest.value)
    }

    mutating func update(id: String, _ attributes: String, customID: String = "paul", at: Date = t0) throws -> KafkaRecord {
        let (edit, problems) = ProfileValidation.validate(
            try JSONParser.parse(Array(attributes.utf8)), path: "a", identified: true)
        precondition(problems.isEmpty, "\(problems)")
        return record(.profileUpdate, id: id, customID: customID, at: at, fields: [JSONMember("profile", edit.json)])
    }

    mutating func event(id: String, _ event: String, customID: String = "paul", at: Date = t0) throws -> KafkaRecord {
        guard case .valid(let validated) = EventValidation.validate(try JSONParser.parse(Array(event.utf8)), path: "e")
        else { preconditionFailure("invalid event \(event)") }
        return record(.event, id: id, customID: customID, at: at, fields: [JSONMember("event", validated.json)])
    }
}

func profileJSON(_ database: PartitionDatabase, _ key: String = "demo/paul") async throws -> String? {
    try await database.read { db in try ProfileView.json(db, key: key) }.map { String(decoding: $0.serialized, as: UTF8.self) }
}

func eventCount(_ database: PartitionDatabase, _ name: String, key: String = "demo/paul") async throws -> Int64? {
    try await database.read { db in
        try Int64.fetchOne(db, sql: "SELECT count FROM event_aggregates WHERE profile_key = ? AND name = ?", arguments: [key, name])
    }
}

@Suite("Profiles in per-partition SQLite")
struct ProfileDatabaseTests {
    @Test("a sequence of writes gives the expected profile")
    func golden() async throws {
        let database = try OrchestratorPartition.open(directory: temporaryDirectory(), partition: 3)
        var writer = Writer(partition: 3)
        let records = [
            try writer.update(id: "1", #"{"$email_address":"paul@example.com","$email_marketing":"subscribed","plan":"free","age":25,"tags":["a","b"]}"#),
            try writer.event(id: "2", #"{"name":"purchased","attributes":{"price":9.5,"$label":"first","$tags":["Sale"]}}"#),
            try writer.update(id: "3", #"{"plan":"gold","age":null,"tags":{"$add":["c","a"],"$remove":["b"]},"$language":"fr","since":{"$date":"2026-01-01T00:00:00Z"}}"#, at: t0 + 60),
            try writer.event(id: "4", #"{"name":"purchased","time":"2026-11-18T11:10:00Z","attributes":{"price":20}}"#, at: t0 + 120),
            // A late event, older than the last one: counted, but the "last" values stay.
            try writer.event(id: "5", #"{"name":"purchased","time":"2026-11-18T10:00:00Z","attributes":{"price":1}}"#, at: t0 + 180),
            try writer.update(id: "6", #"{"$email_marketing":"unsubscribed"}"#, at: t0 + 240),
        ]
        let outbox = try await database.applyBatch(records, apply: OrchestratorApplier.apply)
        #expect(
            try await profileJSON(database)
                == #"{"profile_key":"demo/paul","project":"demo","custom_id":"paul","email":{"address":"paul@example.com","marketing":"unsubscribed","marketing_changed_at":"2026-11-18T11:10:40.000Z","bounced_at":null},"sms":{"phone_number":null,"marketing":null,"marketing_changed_at":null},"native":{"b.language":"fr","b.region":null,"b.timezone":null,"b.install_date":null,"b.last_visit_date":null,"b.last_push_date":null,"b.is_push_optin":false,"b.session_count":0,"b.session_seconds":0.0,"b.first_session_date":null,"b.last_session_date":null},"custom":{"c.plan":"gold","c.since":"2026-01-01T00:00:00.000Z","c.tags":["a","c"]},"events":{"e.PURCHASED":{"count":3,"first":"2026-11-18T10:00:00.000Z","last":"2026-11-18T11:10:00.000Z","label":null,"tags":null,"attributes":{"price.i":20}}},"installations":[],"location":null,"push_changelog":[],"purchases":{},"aliases":[],"created_at":"2026-11-18T11:06:40.000Z","updated_at":"2026-11-18T11:10:40.000Z"}"#
        )
        // Reachability changed twice (email set and subscribed; then unsubscribed): two contact snapshots.
        #expect(outbox.map(\.topic) == [HeraldTopic.contacts.name, HeraldTopic.contacts.name])
        #expect(outbox.allSatisfy { $0.key == "demo/paul" })
        let last = try JSONParser.parse(try #require(outbox.last?.value))
        #expect(last["email"]?["marketing"] == .string("unsubscribed"))
        #expect(try await database.nextOffsets() == [HeraldTopic.ingest.name: 6])
    }

    @Test("a replayed record id is a no-op")
    func dedupe() async throws {
        let database = try OrchestratorPartition.open(directory: temporaryDirectory(), partition: 0)
        var writer = Writer()
        let event = try writer.event(id: "same", #"{"name":"open"}"#)
        var replay = event
        replay.offset = 7
        _ = try await database.applyBatch([event, replay], apply: OrchestratorApplier.apply)
        _ = try await database.applyBatch([replay], apply: OrchestratorApplier.apply)
        #expect(try await eventCount(database, "OPEN") == 1)
    }

    @Test("a record id is remembered per profile: another user's write with the same id is applied, not silenced")
    func dedupePerProfile() async throws {
        let database = try OrchestratorPartition.open(directory: temporaryDirectory(), partition: 0)
        var writer = Writer()
        let event = try JSONParser.parse(Array(#"{"name":"open"}"#.utf8))
        guard case .valid(let validated) = EventValidation.validate(event, path: "e") else { return }
        let paul = writer.record(.event, id: "chosen-by-a-client", customID: "paul", fields: [JSONMember("event", validated.json)])
        let zoe = writer.record(.event, id: "chosen-by-a-client", customID: "zoe", fields: [JSONMember("event", validated.json)])
        _ = try await database.applyBatch([paul, zoe, paul], apply: OrchestratorApplier.apply)
        #expect(try await eventCount(database, "OPEN", key: "demo/paul") == 1)
        #expect(try await eventCount(database, "OPEN", key: "demo/zoe") == 1)
    }

    @Test("the dedupe window, counted from the record's time: ids older than the retention are forgotten, newer ones kept")
    func dedupeWindow() async throws {
        let database = try OrchestratorPartition.open(directory: temporaryDirectory(), partition: 0)
        var writer = Writer()
        let event = try writer.event(id: "old", #"{"name":"open"}"#, at: t0)
        _ = try await database.applyBatch([event], apply: OrchestratorApplier.apply)
        // Received an hour after the cutoff: kept, and a replay is still a no-op.
        #expect(try await database.pruneApplied(before: t0 - 3600) == 0)
        _ = try await database.applyBatch([event], apply: OrchestratorApplier.apply)
        #expect(try await eventCount(database, "OPEN") == 1)
        // Past the window the id is forgotten: a replay that old counts again.
        #expect(try await database.pruneApplied(before: t0 + 1) == 1)
        _ = try await database.applyBatch([event], apply: OrchestratorApplier.apply)
        #expect(try await eventCount(database, "OPEN") == 2)
    }

    @Test("string arrays: $add keeps items unique and at most 25, dropping the oldest; $remove of a missing item is a no-op")
    func arrays() async throws {
        let database = try OrchestratorPartition.open(directory: temporaryDirectory(), partition: 0)
        var writer = Writer()
        let first = (0..<20).map { "\"i\($0)\"" }.joined(separator: ",")
        let more = (20..<30).map { "\"i\($0)\"" }.joined(separator: ",")
        let records = [
            try writer.update(id: "1", #"{"items":[\#(first)]}"#),
            try writer.update(id: "2", #"{"items":{"$add":[\#(more),"i25"],"$remove":["zz"]}}"#),
            try writer.update(id: "3", #"{"other":"text"}"#),
            try writer.update(id: "4", #"{"other":{"$add":["x"]}}"#),
        ]
        _ = try await database.applyBatch(records, apply: OrchestratorApplier.apply)
        let profile = try JSONParser.parse(Array(try #require(try await profileJSON(database)).utf8))
        #expect(profile["custom"]?["c.items"] == .array((5..<30).map { .string("i\($0)") }))
        #expect(profile["custom"]?["c.other"] == .array([.string("x")]))
    }

    @Test("delete removes the profile and everything keyed by it, with a contacts tombstone and its part of the receipt")
    func delete() async throws {
        let database = try OrchestratorPartition.open(directory: temporaryDirectory(), partition: 0)
        var writer = Writer()
        let outbox = try await database.applyBatch(
            [
                try writer.update(id: "1", #"{"plan":"gold"}"#), try writer.event(id: "2", #"{"name":"open"}"#),
                writer.record(.profileDelete, id: "3"),
            ], apply: OrchestratorApplier.apply)
        #expect(try await profileJSON(database) == nil)
        #expect(try await eventCount(database, "OPEN") == nil)
        #expect(try await database.read { try Int.fetchOne($0, sql: "SELECT count(*) FROM profile_attributes") } == 0)
        #expect(outbox.map { "\($0.topic) \($0.value == nil)" } == ["herald.contacts true", "herald.erasures false"])
    }

    @Test("unreadable records go to herald.dlq with the reason, and the offset moves on")
    func deadLetters() async throws {
        let database = try OrchestratorPartition.open(directory: temporaryDirectory(), partition: 0)
        func raw(_ offset: Int64, _ text: String?) -> KafkaRecord {
            KafkaRecord(
                topic: HeraldTopic.ingest.name, partition: 0, offset: offset, key: Array("k".utf8),
                value: text.map { Array($0.utf8) })
        }
        let outbox = try await database.applyBatch(
            [
                raw(50, "{"), raw(51, nil), raw(52, #"{"v":2,"kind":"ingest"}"#),
                raw(53, #"{"v":1,"kind":"ingest","op":"event","id":"x","project":"demo","source":"app","app":"demo-ios","received_at":"2026-11-18T11:10:40.000Z","event":{"name":"OPEN","attributes":{}}}"#),
                // A payload that is not its op's: the reason names the field.
                raw(54, #"{"v":1,"kind":"ingest","op":"profile_update","id":"y","project":"demo","source":"server","custom_id":"paul","received_at":"2026-11-18T11:10:40.000Z","profile":{"custom_attributes":{"age.i":"old"}}}"#),
                raw(55, #"{"v":1,"kind":"ingest","op":"event","id":"z","project":"demo","source":"server","custom_id":"paul","received_at":"2026-11-18T11:10:40.000Z"}"#),
            ],
            apply: OrchestratorApplier.apply)
        let reasons = try outbox.map { try Wire.decode(DeadLetter.self, from: try #require($0.value)).reason }
        #expect(outbox.allSatisfy { $0.topic == HeraldTopic.dlq.name })
        #expect(reasons.count == 6)
        #expect(reasons[0].hasPrefix("not JSON"))
        #expect(reasons[1] == "a null value on herald.ingest")
        #expect(reasons[2] == "not an ingest record of format version 1")
        #expect(reasons[3] == "event from app without installation_id")
        #expect(reasons[4] == "profile.custom_attributes.age.i: not a value of type i")
        #expect(reasons[5] == "event: missing")
        #expect(try await database.nextOffsets() == [HeraldTopic.ingest.name: 56])
    }

    @Test("records an earlier version kept in deferred_records are applied when the partition opens")
    func deferredRecordsApplied() async throws {
        let directory = temporaryDirectory()
        let database = try OrchestratorPartition.open(directory: directory, partition: 0)
        var writer = Writer()
        writer.source = .app(id: "ios", dev: false)
        let deferred = [
            writer.record(.identify, id: "1", installationID: "I"),
            writer.record(.optOut, id: "2", installationID: "I", at: t0 + 5),
        ]
        // What the first version did with these ops: kept them whole, ids not marked applied.
        try await database.write { db in
            for record in deferred {
                try db.execute(
                    sql: "INSERT INTO deferred_records (topic, offset, key, value, op) VALUES (?, ?, ?, ?, ?)",
                    arguments: [record.topic, record.offset, record.keyString, Data(record.value ?? []), "x"])
            }
        }
        let outbox = try await OrchestratorPartition(database).applyDeferred(apply: OrchestratorApplier.apply)
        #expect(outbox.map(\.topic).sorted() == ["herald.contacts", "herald.ingest"])
        let profile = try JSONParser.parse(Array(try #require(try await profileJSON(database)).utf8))
        #expect(profile["installations"]?[0]?["installation_id"] == .string("I"))
        #expect(profile["installations"]?[0]?["opted_out"] == .bool(true))
        #expect(try await database.read { try Int.fetchOne($0, sql: "SELECT count(*) FROM deferred_records") } == 0)
        #expect(try await OrchestratorPartition(database).applyDeferred(apply: OrchestratorApplier.apply).isEmpty)
    }
}

@Suite("Crash safety")
struct CrashSafetyTests {
    struct Crash: Error {}

    @Test("a batch abandoned half-way changes nothing; redelivered, every write is applied exactly once")
    func abandonedBatch() async throws {
        let directory = temporaryDirectory()
        var writer = Writer()
        let records = try (0..<100).map { index in
            index % 10 == 9
                ? try writer.update(id: "u\(index)", #"{"$email_address":"p\#(index)@example.com"}"#)
                : try writer.event(id: "e\(index)", #"{"name":"tap"}"#)
        }
        do {
            let database = try OrchestratorPartition.open(directory: directory, partition: 0)
            // The process dies after applying 57 records of the batch, before the commit.
            let applied = Locked(0)
            await #expect(throws: Crash.self) {
                _ = try await database.applyBatch(records) { db, record in
                    if applied.withLock({ $0 += 1; return $0 }) > 57 { throw Crash() }
                    return try OrchestratorApplier.apply(db, record: record)
                }
            }
            #expect(try await eventCount(database, "TAP") == nil)
            #expect(try await database.nextOffsets().isEmpty)
            #expect(try await database.pendingOutbox().isEmpty)
            try database.close()
        }
        // Restart: reopen, resume at the stored offset (none: the beginning), Kafka redelivers the whole batch.
        let database = try OrchestratorPartition.open(directory: directory, partition: 0)
        #expect(try await database.nextOffsets().isEmpty)
        let outbox = try await database.applyBatch(records, apply: OrchestratorApplier.apply)
        #expect(try await eventCount(database, "TAP") == 90)
        #expect(outbox.count == 10, "one contact snapshot per email change")
        #expect(try await database.nextOffsets() == [HeraldTopic.ingest.name: 100])
        // Kafka's at-least-once: the same batch again after a crash between commit and the consumer's next poll.
        _ = try await database.applyBatch(records, apply: OrchestratorApplier.apply)
        #expect(try await eventCount(database, "TAP") == 90)
    }

    @Test("outbox records committed but not produced before a crash are still there after a restart")
    func outboxSurvives() async throws {
        let directory = temporaryDirectory()
        var writer = Writer()
        do {
            let database = try OrchestratorPartition.open(directory: directory, partition: 0)
            let outbox = try await database.applyBatch(
                [try writer.update(id: "1", #"{"$email_address":"a@b.co"}"#)], apply: OrchestratorApplier.apply)
            #expect(outbox.count == 1)
            try database.close()  // dies before producing
        }
        let database = try OrchestratorPartition.open(directory: directory, partition: 0)
        let pending = try await database.pendingOutbox()
        #expect(pending.map(\.key) == ["demo/paul"])
        try await database.markProduced(pending.map(\.id))
        #expect(try await database.pendingOutbox().isEmpty)
    }
}
