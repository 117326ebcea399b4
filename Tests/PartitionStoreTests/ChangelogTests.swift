import Foundation
import GRDB
import HeraldTestSupport
import Logging
import Shared
import Testing

@testable import PartitionStore

/// An in-memory broker: what is published is appended to each partition's log with offsets, and read back as a
/// changelog source. Reading can be held after a number of records until the test releases it, and the log can be
/// made to start later (retention deleted its beginning).
final class MemoryBroker: OutboxPublisher, ChangelogSource {
    private struct State {
        var logs: [TopicPartition: [KafkaRecord]] = [:]
        /// The next offset of each log (compaction leaves gaps: it is not the count).
        var ends: [TopicPartition: Int64] = [:]
        var firstKept: [TopicPartition: Int64] = [:]
        var holdReadsAfter: Int?
        var readsHeld = false
        var releases: [CheckedContinuation<Void, Never>] = []
    }

    private let state = Locked(State())

    func publish(_ records: [KafkaOutgoingRecord]) async throws -> [KafkaDeliveryReport] {
        state.withLock { state in
            records.map { record in
                let partition = TopicPartition(record.topic, record.partition ?? 0)
                let offset = state.ends[partition] ?? 0
                state.ends[partition] = offset + 1
                state.logs[partition, default: []].append(KafkaRecord(
                    topic: record.topic, partition: partition.partition, offset: offset, key: record.key, value: record.value,
                    headers: record.headers))
                return KafkaDeliveryReport(topic: record.topic, partition: partition.partition, offset: offset)
            }
        }
    }

    func records(_ partition: TopicPartition) -> [KafkaRecord] { state.withLock { $0.logs[partition] ?? [] } }

    /// What Kafka's log cleaner leaves of a compacted topic: the newest record of each key at its offset, and no
    /// tombstones (deleted once `delete.retention.ms` has passed). The embedded broker never compacts.
    func compact(_ partition: TopicPartition) {
        state.withLock { state in
            let log = state.logs[partition] ?? []
            var newest: [[UInt8]: Int64] = [:]
            for record in log { newest[record.key ?? []] = record.offset }
            state.logs[partition] = log.filter { newest[$0.key ?? []] == $0.offset && $0.value != nil }
        }
    }

    func deleteBefore(_ offset: Int64, _ partition: TopicPartition) { state.withLock { $0.firstKept[partition] = offset } }

    func holdReads(after records: Int) { state.withLock { $0.holdReadsAfter = records } }
    var readsHeld: Bool { state.withLock { $0.readsHeld } }

    func releaseReads() {
        let waiters = state.withLock { state in
            state.holdReadsAfter = nil
            defer { state.releases.removeAll() }
            return state.releases
        }
        for waiter in waiters { waiter.resume() }
    }

    func watermarks(_ partition: TopicPartition) async throws -> (low: Int64, high: Int64) {
        state.withLock { state in
            let high = state.ends[partition] ?? 0
            return (min(state.firstKept[partition] ?? 0, high), high)
        }
    }

    func read(_ partition: TopicPartition, from start: Int64, until end: Int64, _ body: ([KafkaRecord]) async throws -> Void)
        async throws
    {
        let (log, first) = state.withLock { ($0.logs[partition] ?? [], $0.firstKept[partition] ?? 0) }
        let records = log.filter { $0.offset >= max(start, first) && $0.offset < end }
        var handed = 0
        for chunk in stride(from: 0, to: records.count, by: 100) {
            let hold = state.withLock { state -> Bool in
                guard let after = state.holdReadsAfter, handed >= after else { return false }
                state.readsHeld = true
                return true
            }
            if hold {
                await withCheckedContinuation { continuation in
                    let released = state.withLock { state -> Bool in
                        if state.holdReadsAfter == nil { return true }
                        state.releases.append(continuation)
                        return false
                    }
                    if released { continuation.resume() }
                }
            }
            let slice = Array(records[chunk..<min(chunk + 100, records.count)])
            try await body(slice)
            handed += slice.count
        }
    }
}

private let logger = Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })
private let topic = "herald.state.test"
private let inputs = [TopicPartition("in", 0)]

/// Generic tables plus one of each kind a service has: a rowid table with a BLOB, a table WITHOUT ROWID with a
/// composite key, a table with no declared key, a child table with a foreign key that cascades.
private var migrator: DatabaseMigrator {
    var migrator = DatabaseMigrator()
    migrator.registerMigration("core") { db in
        try db.execute(sql: PartitionDatabase.coreTablesSQL + RecordDedupe.tableSQL)
        try db.execute(sql: """
            CREATE TABLE profiles (key TEXT PRIMARY KEY, document BLOB, visits INTEGER NOT NULL, score REAL);
            CREATE TABLE memberships (segment TEXT, profile TEXT, since TEXT, PRIMARY KEY (segment, profile)) WITHOUT ROWID;
            CREATE TABLE notes (body TEXT);
            CREATE TABLE visits (
                id INTEGER PRIMARY KEY AUTOINCREMENT, profile TEXT NOT NULL REFERENCES profiles (key) ON DELETE CASCADE,
                at TEXT NOT NULL);
            """)
    }
    return migrator
}

private func owner(_ broker: MemoryBroker, _ directory: String = temporaryDirectory()) -> PartitionOwner {
    PartitionOwner(
        directory: directory, service: "test", migrator: migrator, publisher: broker,
        changelog: ChangelogSettings(topic: topic, source: broker), logger: logger)
}

/// An owner with no time to restore inside the rebalance callback: every restore goes on outside it, then resumes the
/// partition through `flow`.
private func ownerWithoutRestoreBudget(_ broker: MemoryBroker, _ directory: String = temporaryDirectory(), flow: FakeFlow) -> PartitionOwner {
    let owner = PartitionOwner(
        directory: directory, service: "test", migrator: migrator, publisher: broker,
        changelog: ChangelogSettings(topic: topic, source: broker), restoreBudget: .zero, logger: logger)
    owner.setFlow(flow)
    return owner
}

/// Every row of the service's tables, as text, in key order.
private func dump(_ database: PartitionDatabase) async throws -> [String] {
    try await database.read { db in
        var lines: [String] = []
        for table in ["partition_offsets", "applied_records", "profiles", "memberships", "notes", "visits"] {
            let columns = table == "notes" ? "rowid, *" : "*"
            for row in try Row.fetchAll(db, sql: "SELECT \(columns) FROM \(table) ORDER BY 1, 2") {
                lines.append("\(table) \(row.description)")
            }
        }
        return lines
    }
}

/// Applies one input record (offset `offset`) that writes profile `key`, its membership, and a note.
private func apply(_ database: PartitionDatabase, offset: Int64, key: String, visits: Int) async throws {
    try await apply(database, [(offset, key, visits)])
}

/// Applies input records in one transaction, each as `apply(_:offset:key:visits:)` does.
private func apply(_ database: PartitionDatabase, _ records: [(offset: Int64, key: String, visits: Int)]) async throws {
    let byOffset = Dictionary(uniqueKeysWithValues: records.map { ($0.offset, $0) })
    let batch = records.map { KafkaRecord(topic: "in", partition: 0, offset: $0.offset, key: nil, value: nil) }
    _ = try await database.applyBatch(batch) { db, record in
        let (offset, key, visits) = byOffset[record.offset]!
        _ = try RecordDedupe.firstTime(db, scope: "demo", id: "write-\(offset)", at: Date(timeIntervalSince1970: 0))
        try db.execute(
            sql: """
                INSERT INTO profiles (key, document, visits, score) VALUES (?, ?, ?, 0)
                ON CONFLICT (key) DO UPDATE SET document = excluded.document, visits = excluded.visits
                """,
            arguments: [key, Data([0, 1, 0xFE, UInt8(visits % 256)]), visits])
        // A child row, then its parent changed again: the parent's last image comes after the child in the changelog.
        try db.execute(sql: "INSERT INTO visits (profile, at) VALUES (?, ?)", arguments: [key, "t\(offset)"])
        try db.execute(sql: "UPDATE profiles SET score = ? WHERE key = ?", arguments: [Double(visits) / 3, key])
        try db.execute(
            sql: "INSERT OR REPLACE INTO memberships (segment, profile, since) VALUES ('vip', ?, ?)",
            arguments: [key, "t\(offset)"])
        try db.execute(sql: "INSERT INTO notes (body) VALUES (?)", arguments: ["note \(offset) with \"quotes\""])
        return []
    }
}

/// An owner on `directory` that applies the input records at `offsets` (profile `p<offset % keys>`, `visits` or the
/// offset) and releases the partition; returns what its database held.
@discardableResult
private func written(
    _ broker: MemoryBroker, _ directory: String = temporaryDirectory(), offsets: Range<Int>, keys: Int, visits: Int? = nil
) async throws -> [String] {
    let writer = owner(broker, directory)
    _ = try await writer.partitionsAssigned(inputs)
    let database = try #require(await writer.database(0))
    // 25 records a transaction: a changelog of many transactions, written in a fraction of the time one each takes
    // (2,000 transactions were 5 s of the restore tests alone, past their minute on a loaded machine).
    for chunk in stride(from: offsets.lowerBound, to: offsets.upperBound, by: 25) {
        try await apply(database, (chunk..<min(chunk + 25, offsets.upperBound)).map { offset in
            (Int64(offset), "p\(offset % keys)", visits ?? offset)
        })
    }
    let rows = try await dump(database)
    await writer.partitionsRevoked(inputs, lost: false)
    return rows
}

/// A new owner's assignment on `directory`: where the input resumes and what its database holds; then released.
private func takeOver(_ broker: MemoryBroker, _ directory: String = temporaryDirectory()) async throws
    -> (start: KafkaStartOffset?, rows: [String])
{
    let taker = owner(broker, directory)
    let starts = try await taker.partitionsAssigned(inputs)
    let rows = try await dump(try #require(await taker.database(0)))
    await taker.partitionsRevoked(inputs, lost: false)
    return (starts[TopicPartition("in", 0)], rows)
}

/// The test tables as a later version has them: `memberships` renamed `segment_members` by a migration.
private var renamingMigrator: DatabaseMigrator {
    var renaming = migrator
    renaming.registerMigration("memberships renamed") { db in
        try ChangelogCapture.renameTable(db, from: "memberships", to: "segment_members")
    }
    return renaming
}

/// A later version's assignment on `directory` (its migration renames `memberships`), restoring with `renamed` as its
/// `ChangelogSettings.renamedTables`: the rows of `segment_members`; then released.
private func takeOverRenamed(
    _ broker: MemoryBroker, _ directory: String = temporaryDirectory(), renamed: [String: String]
) async throws -> [String] {
    let taker = PartitionOwner(
        directory: directory, service: "test", migrator: renamingMigrator, publisher: broker,
        changelog: ChangelogSettings(topic: topic, source: broker, renamedTables: renamed), logger: logger)
    _ = try await taker.partitionsAssigned(inputs)
    let rows = try await members(try #require(await taker.database(0)), table: "segment_members")
    await taker.partitionsRevoked(inputs, lost: false)
    return rows
}

/// The rows of a membership table, in key order.
private func members(_ database: PartitionDatabase, table: String) async throws -> [String] {
    try await database.read { db in
        try Row.fetchAll(db, sql: "SELECT * FROM \(table) ORDER BY 1, 2").map(\.description)
    }
}

// The limit is for a hang: the restores take 1–4 s alone and were up to 61 s in make test's parallel main run.
@Suite("Changelog and restore", .timeLimit(.minutes(5)))
struct ChangelogTests {
    @Test("a new owner with an empty directory restores rows, deletions, blobs and offsets, and resumes where the old one was")
    func restoreOnEmptyDirectory() async throws {
        let broker = MemoryBroker()
        let first = owner(broker)
        _ = try await first.partitionsAssigned(inputs)
        let database = try #require(await first.database(0))
        for offset in 0..<300 { try await apply(database, offset: Int64(offset), key: "p\(offset % 40)", visits: offset) }
        try await database.write { db in
            try db.execute(sql: "DELETE FROM memberships WHERE profile = 'p3'")
            try db.execute(sql: "UPDATE memberships SET segment = 'renamed' WHERE profile = 'p4'")
            try db.execute(sql: "DELETE FROM profiles WHERE key = 'p5'")
            try db.execute(sql: "DELETE FROM notes WHERE rowid % 7 = 0")
        }
        let expected = try await dump(database)
        await first.partitionsRevoked(inputs, lost: false)
        #expect(broker.records(TopicPartition(topic, 0)).count > 300)

        let second = owner(broker)
        let starts = try await second.partitionsAssigned(inputs)
        #expect(starts == [TopicPartition("in", 0): .offset(300)])
        let restored = try #require(await second.database(0))
        #expect(try await dump(restored) == expected)
        #expect(try await dump(restored).contains { $0.hasPrefix("memberships") && $0.contains("renamed") })
        #expect(!(try await dump(restored)).contains { $0.hasPrefix("visits") && $0.contains("\"p5\"") }, "cascaded")
        // What the new owner writes goes on in the same changelog, under its own writer id.
        try await apply(restored, offset: 300, key: "p1", visits: 1000)
        await second.partitionsRevoked(inputs, lost: false)
        let writers = Set(broker.records(TopicPartition(topic, 0)).compactMap { $0.header(ChangelogEntry.writerHeader) })
        #expect(writers.count == 2)
    }

    @Test("a BLOB holding JSON text goes to the changelog as that text (about its own size, not twice), any other as hex; both restored byte for byte")
    func blobsWithoutDoubling() async throws {
        let broker = MemoryBroker()
        let first = owner(broker)
        _ = try await first.partitionsAssigned(inputs)
        let database = try #require(await first.database(0))
        // A contact snapshot's shape: JSON text with quotes, escapes and non-ASCII; binary bytes; JSON text cut by a NUL.
        let json = Array(#"{"installations":[{"token":"\#(String(repeating: "fcm-token-", count: 300))","name":"Zoë \"ß\" \\ é"}]}"#.utf8)
        let documents: [(String, [UInt8])] = [
            ("json", json), ("binary", [0, 1, 0xFE, 0xFF, 0x7B]), ("nul", Array(#"{"a":1}"#.utf8) + [0] + Array("x".utf8)),
            ("number", Array("12".utf8)), ("not-utf8", Array(#"{"a":""#.utf8) + [0xFF, 0xC3] + Array(#""}"#.utf8)),
        ]
        try await database.write { db in
            for (key, bytes) in documents {
                try db.execute(
                    sql: "INSERT INTO profiles (key, document, visits, score) VALUES (?, ?, 0, 0)", arguments: [key, Data(bytes)])
            }
        }
        let expected = try await dump(database)
        await first.partitionsRevoked(inputs, lost: false)
        let images = Dictionary(
            broker.records(TopicPartition(topic, 0)).compactMap { record -> (String, Int)? in
                guard let key = record.keyString, key.hasPrefix("profiles/") else { return nil }
                return (key, record.value?.count ?? 0)
            }, uniquingKeysWith: { $1 })
        let jsonImage = try #require(images[#"profiles/["json"]"#])
        #expect(
            jsonImage < json.count * 12 / 10,
            "\(jsonImage) bytes for a \(json.count)-byte document (hex: twice): \(broker.records(TopicPartition(topic, 0)).last { $0.keyString == #"profiles/["json"]"# }.flatMap(\.value).map { String(decoding: $0.prefix(300), as: UTF8.self) } ?? "")")
        let second = owner(broker)
        _ = try await second.partitionsAssigned(inputs)
        let database2 = try #require(await second.database(0))
        #expect(try await dump(database2) == expected)
        let stored = try await database2.read { db in
            try Dictionary(uniqueKeysWithValues: Row.fetchAll(db, sql: "SELECT key, document FROM profiles").map {
                (String($0["key"] as String), Array(($0["document"] as Data?) ?? Data()))
            })
        }
        for (key, bytes) in documents { #expect(stored[key] == bytes, "\(key)") }
        await second.partitionsRevoked(inputs, lost: false)
    }

    @Test("a restart on its own database finds only its own records past its position: nothing restored, nothing lost")
    func ownRecordsAfterCrash() async throws {
        let broker = MemoryBroker()
        let directory = temporaryDirectory()
        let first = owner(broker, directory)
        _ = try await first.partitionsAssigned(inputs)
        let database = try #require(await first.database(0))
        for offset in 0..<20 { try await apply(database, offset: Int64(offset), key: "p\(offset)", visits: offset) }
        await first.flush(0)
        // A crash after the broker stored the records but before their positions were recorded.
        try await database.writeUnmarked { db in try db.execute(sql: "UPDATE changelog_state SET next_offset = 3") }
        let expected = try await dump(database)
        await first.partitionsRevoked(inputs, lost: true)

        let end = try await broker.watermarks(TopicPartition(topic, 0)).high
        let again = owner(broker, directory)
        _ = try await again.partitionsAssigned(inputs)
        let reopened = try #require(await again.database(0))
        #expect(try await dump(reopened) == expected)
        #expect(try await reopened.changelogPosition().nextOffset == end)
        #expect(try await broker.watermarks(TopicPartition(topic, 0)).high == end, "nothing written again")
        await again.partitionsRevoked(inputs, lost: false)
    }

    @Test("a database another owner's changelog has overtaken is restored anew, not resumed")
    func overtakenDatabase() async throws {
        let broker = MemoryBroker()
        let directoryA = temporaryDirectory()
        try await written(broker, directoryA, offsets: 0..<10, keys: 10, visits: 1)
        let expected = try await written(broker, offsets: 10..<15, keys: 3, visits: 5)
        let (start, rows) = try await takeOver(broker, directoryA)
        #expect(start == .offset(15))
        #expect(rows == expected, "\(Set(rows).symmetricDifference(expected).sorted())")
    }

    @Test("a transaction whose writer stopped half-way is not applied, and a later restore agrees with this one")
    func incompleteTail() async throws {
        let broker = MemoryBroker()
        try await written(broker, offsets: 0..<5, keys: 5, visits: 1)
        // Half of a transaction (a profile and the input offset it moved) produced before its writer died.
        let writer = "dead-writer"
        try await broker.publish([
            ChangelogEntry(.row(table: "profiles", key: "[\"p0\"]", image: Array(#"{"key":"p0","visits":99}"#.utf8)), writer: writer)
                .record(topic: topic, partition: 0),
            ChangelogEntry(.row(table: "partition_offsets", key: "[\"in\"]", image: Array(#"{"topic":"in","next_offset":6}"#.utf8)), writer: writer)
                .record(topic: topic, partition: 0),
        ])

        let second = owner(broker)
        #expect(try await second.partitionsAssigned(inputs) == [TopicPartition("in", 0): .offset(5)])
        let restored = try #require(await second.database(0))
        #expect(!(try await dump(restored)).contains { $0.contains("99") })
        // It goes on: its next transaction (another profile) commits after the dead writer's half.
        try await apply(restored, offset: 5, key: "p3", visits: 7)
        let expected = try await dump(restored)
        await second.partitionsRevoked(inputs, lost: false)

        // The second owner wrote the two keys again as it held them: a third restore reads the same state, although
        // a commit now follows the dead writer's half.
        let (start, rows) = try await takeOver(broker)
        #expect(start == .offset(6))
        #expect(rows == expected)
    }

    @Test("a compacted changelog (the newest record of each key, one commit record left) is restored in chunks, each saving its progress, to the same rows")
    func compactedChangelog() async throws {
        let broker = MemoryBroker()
        let expected = try await written(broker, offsets: 0..<1500, keys: 40)
        let log = TopicPartition(topic, 0)
        let before = broker.records(log).count
        broker.compact(log)
        let kept = broker.records(log)
        #expect(kept.filter { $0.keyString == ChangelogEntry.commitKey }.count == 1)
        #expect(kept.count > 3000 && kept.count < before)

        // Interrupted part-way: the chunks it applied are saved (grouping rows by the commits after them held all of
        // them until the one commit left, at the end, and saved nothing).
        let directory = temporaryDirectory()
        let second = owner(broker, directory)
        broker.holdReads(after: 2500)
        let assigning = Task { try await second.partitionsAssigned(inputs) }
        try await waitUntil("the restore to hold") { broker.readsHeld }
        await second.partitionsRevoked(inputs, lost: false)
        broker.releaseReads()
        #expect(try await assigning.value.isEmpty)
        let partial = try PartitionDatabase.open(directory: directory, partition: 0, migrator: migrator, changelog: topic)
        let position = try await partial.changelogPosition()
        #expect(position.restoring && position.nextOffset >= 2000, "\(position)")
        try partial.close()

        // The next assignment goes on from there and ends with the rows the writer had.
        #expect(try await second.partitionsAssigned(inputs) == [TopicPartition("in", 0): .offset(1500)])
        #expect(try await dump(try #require(await second.database(0))) == expected)
        await second.partitionsRevoked(inputs, lost: false)
        // And a restore from the start agrees.
        #expect(try await takeOver(broker).rows == expected)
    }

    @Test("a table a migration renamed comes back under its new name, from a changelog written before the rename or after, compacted or not")
    func renamedTable() async throws {
        let log = TopicPartition(topic, 0)
        // Written by a version before the rename, restored by one after.
        let before = MemoryBroker()
        let directory = temporaryDirectory()
        _ = try await written(before, directory, offsets: 0..<60, keys: 12)
        let old = PartitionOwner(
            directory: directory, service: "test", migrator: migrator, publisher: before,
            changelog: ChangelogSettings(topic: topic, source: before), logger: logger)
        _ = try await old.partitionsAssigned(inputs)
        let expected = try await members(try #require(await old.database(0)), table: "memberships")
        await old.partitionsRevoked(inputs, lost: false)
        #expect(expected.count == 12)
        // Without the rename listed, the old name's records are skipped: the rows are lost.
        #expect(try await takeOverRenamed(before, renamed: [:]).isEmpty)
        // Listed: restored under the new name, and written again under it with the old name's tombstones.
        #expect(try await takeOverRenamed(before, renamed: ["memberships": "segment_members"]) == expected)
        let keys = before.records(log).compactMap(\.keyString)
        #expect(keys.contains { $0.hasPrefix("segment_members/") })
        // Compacted (the tombstones gone too): the new name alone brings every row back, and the old one none.
        before.compact(log)
        #expect(!before.records(log).contains { $0.keyString?.hasPrefix("memberships/") == true })
        #expect(try await takeOverRenamed(before, renamed: [:]) == expected)

        // A database of the version before, opened by the version after: renamed in place, and in its changelog.
        let upgraded = MemoryBroker()
        let upgradedDirectory = temporaryDirectory()
        _ = try await written(upgraded, upgradedDirectory, offsets: 0..<60, keys: 12)
        #expect(try await takeOverRenamed(upgraded, upgradedDirectory, renamed: [:]) == expected)
        upgraded.compact(log)
        #expect(!upgraded.records(log).contains { $0.keyString?.hasPrefix("memberships/") == true })
        #expect(try await takeOverRenamed(upgraded, renamed: [:]) == expected)
    }

    @Test("a restore longer than the rebalance callback's budget goes on outside it: assigned held, then resumed from the restored offsets")
    func restoreOutsideCallback() async throws {
        let broker = MemoryBroker()
        let expected = try await written(broker, offsets: 0..<300, keys: 40)
        let events = Locked<[String]>([])
        let flow = FakeFlow(events: events)
        let taker = ownerWithoutRestoreBudget(broker, flow: flow)
        // The callback returns at once: the consumer goes on polling the member's other partitions.
        #expect(try await taker.partitionsAssigned(inputs) == [TopicPartition("in", 0): .held])
        try await waitUntil("the partition resumed") { events.withLock { $0 }.contains { $0.hasPrefix("resume") } }
        #expect(events.withLock { $0 }.count == 1)
        #expect(events.withLock { $0 }.first?.contains("300") == true, "\(events.withLock { $0 })")
        #expect(await taker.state(of: 0) == .running)
        #expect(try await dump(try #require(await taker.database(0))) == expected)
        await taker.partitionsRevoked(inputs, lost: false)
    }

    @Test("a restore going on outside the callback stops at a revocation; a later assignment waits for it, then finishes it")
    func restoreOutsideCallbackRevoked() async throws {
        let broker = MemoryBroker()
        let expected = try await written(broker, offsets: 0..<1500, keys: 40)
        let directory = temporaryDirectory()
        let events = Locked<[String]>([])
        let flow = FakeFlow(events: events)
        let taker = ownerWithoutRestoreBudget(broker, directory, flow: flow)
        broker.holdReads(after: 2500)
        #expect(try await taker.partitionsAssigned(inputs) == [TopicPartition("in", 0): .held])
        try await waitUntil("the restore outside the callback to hold") { broker.readsHeld }
        await taker.partitionsRevoked(inputs, lost: false)
        broker.releaseReads()
        #expect(await taker.state(of: 0) == nil)
        // Assigned again (budget zero again: held, then resumed once the restore ends): it waits for the first one to
        // stop, and goes on from what it saved.
        let starts = try await taker.partitionsAssigned(inputs)
        #expect(starts == [TopicPartition("in", 0): .held])
        try await waitUntil("the partition resumed") { events.withLock { $0 }.contains { $0.hasPrefix("resume") } }
        #expect(events.withLock { $0 }.filter { $0.hasPrefix("resume") }.count == 1)
        #expect(try await dump(try #require(await taker.database(0))) == expected)
        await taker.partitionsRevoked(inputs, lost: false)
    }

    @Test("a restore interrupted by a revocation stops between transactions; the next assignment goes on from there")
    func restoreInterruptedByRevoke() async throws {
        let broker = MemoryBroker()
        let expected = try await written(broker, offsets: 0..<2000, keys: 500)

        let directory = temporaryDirectory()
        let second = owner(broker, directory)
        broker.holdReads(after: 3000)
        let assigning = Task { try await second.partitionsAssigned(inputs) }
        try await waitUntil("the restore to hold") { broker.readsHeld }
        await second.partitionsRevoked(inputs, lost: false)
        broker.releaseReads()
        #expect(try await assigning.value.isEmpty, "the revoked partition is not started")
        #expect(await second.database(0) == nil)

        // What it applied stayed, marked as a restore in progress.
        let partial = try PartitionDatabase.open(directory: directory, partition: 0, migrator: migrator, changelog: topic)
        let position = try await partial.changelogPosition()
        #expect(position.restoring)
        #expect(position.nextOffset > 0)
        try partial.close()

        let starts = try await second.partitionsAssigned(inputs)
        #expect(starts == [TopicPartition("in", 0): .offset(2000)])
        #expect(try await dump(try #require(await second.database(0))) == expected)
        await second.partitionsRevoked(inputs, lost: false)
    }

    @Test("a changelog whose beginning was deleted is not restored half: the partition is rebuilt from its inputs")
    func truncatedChangelog() async throws {
        let broker = MemoryBroker()
        try await written(broker, offsets: 0..<10, keys: 1)
        broker.deleteBefore(5, TopicPartition(topic, 0))
        let (start, rows) = try await takeOver(broker)
        #expect(start == .beginning)
        #expect(rows.isEmpty)
    }

    @Test("a lost partition's outputs are produced, its changelog is not (the new owner writes it now)")
    func lostPartitionHoldsChangelog() async throws {
        let broker = MemoryBroker()
        let first = owner(broker)
        _ = try await first.partitionsAssigned(inputs)
        let database = try #require(await first.database(0))
        try await apply(database, offset: 0, key: "p", visits: 1)
        await first.flush(0)
        let produced = broker.records(TopicPartition(topic, 0)).count
        _ = try await database.writeWithOutbox { db in
            try db.execute(sql: "UPDATE profiles SET visits = 2")
            return ((), [PendingOutput(topic: "out", key: "k", value: [1])])
        }
        await first.partitionsRevoked(inputs, lost: true)
        #expect(broker.records(TopicPartition("out", 0)).count == 1)
        #expect(broker.records(TopicPartition(topic, 0)).count == produced)
    }

    @Test("a transaction may be acted on once the changelog is produced through its commit record; a lost partition's never")
    func changelogHolds() async throws {
        let broker = MemoryBroker()
        let first = owner(broker)
        _ = try await first.partitionsAssigned(inputs)
        let database = try #require(await first.database(0))
        let written = try await database.writeWithOutboxLogged { db in
            try db.execute(sql: "INSERT INTO profiles (key, visits) VALUES ('p', 1)")
            return ((), [PendingOutput]())
        }
        let end = try #require(written.changelogEnd)
        #expect(await first.changelogHolds(0, through: end))
        // The row and its transaction's commit record are in the topic (a restore applies the row).
        #expect(broker.records(TopicPartition(topic, 0)).count == 2)
        // The wait ends with the round that produced the end; the flush may go on a little: done before the next write.
        await first.flush(0)
        let later = try await database.writeWithOutboxLogged { db in
            try db.execute(sql: "UPDATE profiles SET visits = 2")
            return ((), [PendingOutput]())
        }
        await first.partitionsRevoked(inputs, lost: true)
        #expect(await !first.changelogHolds(0, through: try #require(later.changelogEnd)))
        #expect(broker.records(TopicPartition(topic, 0)).count == 2)
        // Nothing written: no commit record, nothing to wait for.
        let second = owner(broker)
        _ = try await second.partitionsAssigned(inputs)
        let unchanged = try await #require(await second.database(0)).writeWithOutboxLogged { _ in ((), [PendingOutput]()) }
        #expect(unchanged.changelogEnd == nil)
    }

    @Test("a database made before its changelog existed captures its whole state on its first assignment")
    func adoptsExistingDatabase() async throws {
        let broker = MemoryBroker()
        let directory = temporaryDirectory()
        let plain = PartitionOwner(directory: directory, service: "test", migrator: migrator, publisher: broker, logger: logger)
        _ = try await plain.partitionsAssigned(inputs)
        for offset in 0..<10 { try await apply(try #require(await plain.database(0)), offset: Int64(offset), key: "p\(offset)", visits: 1) }
        let expected = try await dump(try #require(await plain.database(0)))
        await plain.partitionsRevoked(inputs, lost: false)
        #expect(broker.records(TopicPartition(topic, 0)).isEmpty)

        let upgraded = owner(broker, directory)
        _ = try await upgraded.partitionsAssigned(inputs)
        await upgraded.partitionsRevoked(inputs, lost: false)
        let (start, rows) = try await takeOver(broker)
        #expect(start == .offset(10))
        #expect(rows == expected)
    }

    @Test("a flush produces a transaction's outputs in chunks before any of its changelog; a changelog the broker refuses leaves the outputs produced once")
    func flushRounds() async throws {
        let broker = MemoryBroker()
        let first = owner(broker)
        _ = try await first.partitionsAssigned(inputs)
        let database = try #require(await first.database(0))
        await first.flush(0)
        _ = try await database.writeWithOutbox { db in
            try db.execute(sql: "INSERT INTO notes (body) VALUES ('many outputs')")
            return ((), (0..<2_500).map { PendingOutput(topic: "out", key: "k\($0)", value: [UInt8($0 % 256)]) })
        }
        let publisher = RoundsPublisher(broker)
        publisher.refuse(topic)
        await #expect(throws: KafkaError.self) { try await database.produceOutbox(with: publisher) }
        // Three rounds of outputs (a chunk is 1,000), then the changelog (the row and the commit record), once the outbox
        // was read to its end.
        #expect(publisher.calls == [["out": 1_000], ["out": 1_000], ["out": 500], [topic: 2]])
        #expect(try await database.pendingOutbox().isEmpty)
        #expect(try await database.hasUnproduced())

        publisher.refuse(nil)
        try await database.produceOutbox(with: publisher)
        #expect(publisher.calls.last == [topic: 2])
        let keys = broker.records(TopicPartition("out", 0)).map { String(decoding: $0.key ?? [], as: UTF8.self) }
        let onceInOrder = keys == (0..<2_500).map { "k\($0)" }
        #expect(onceInOrder, "\(keys.count) outputs produced (\(Set(keys).count) distinct) for 2,500")
        #expect(try await database.hasUnproduced() == false)
        await first.partitionsRevoked(inputs, lost: false)
    }
}

extension ChangelogTests {
    @Test("a flush writes nothing: what the broker acknowledged is deleted by the partition's next write (or at its close), and never produced twice meanwhile")
    func producedDeletedByNextWrite() async throws {
        let broker = MemoryBroker()
        let first = owner(broker)
        _ = try await first.partitionsAssigned(inputs)
        let database = try #require(await first.database(0))
        await first.flush(0)
        try await database.forgetProduced()
        func count(_ table: String) async throws -> Int {
            try await database.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM \(table)") ?? -1 }
        }
        _ = try await database.writeWithOutbox { db in
            try db.execute(sql: "INSERT INTO notes (body) VALUES ('two outputs')")
            return ((), [PendingOutput(topic: "out", key: "a", value: [1]), PendingOutput(topic: "out", key: "b", value: [2])])
        }
        let publisher = RoundsPublisher(broker)
        try await database.produceOutbox(with: publisher)
        #expect(publisher.calls == [["out": 2], [topic: 2]])
        // Produced and marked, still in the tables: the flush wrote nothing.
        #expect(try await count("outbox") == 2)
        #expect(try await count("changelog") == 2)
        #expect(try await database.pendingOutbox().isEmpty)
        #expect(try await database.hasUnproduced() == false)
        // A second flush reads past the marks: nothing again.
        try await database.produceOutbox(with: publisher)
        #expect(publisher.calls.count == 2)
        // The partition's next write deletes them first thing, and is a transaction of its own in the changelog.
        _ = try await database.writeWithOutbox { db in
            try db.execute(sql: "INSERT INTO notes (body) VALUES ('the next write')")
            return ((), [PendingOutput]())
        }
        #expect(try await count("outbox") == 0)
        #expect(try await count("changelog") == 2)
        try await database.produceOutbox(with: publisher)
        #expect(publisher.calls.last == [topic: 2])
        // What no write deleted yet goes when the partition closes: opened again, it has nothing to produce.
        let directory = (database.path as NSString).deletingLastPathComponent
        await first.partitionsRevoked(inputs, lost: false)
        let reopened = try PartitionDatabase.open(directory: directory, partition: 0, migrator: migrator, changelog: topic)
        #expect(try await reopened.hasUnproduced() == false)
        try reopened.close()
        let keys = broker.records(TopicPartition("out", 0)).map { String(decoding: $0.key ?? [], as: UTF8.self) }
        #expect(keys == ["a", "b"])
    }
}

/// Records each publish call's records per topic, and refuses a topic's records when told (a broker that does not
/// answer for it), else hands them to the memory broker.
private final class RoundsPublisher: OutboxPublisher {
    private let broker: MemoryBroker
    private let state = Locked((calls: [[String: Int]](), refused: String?.none))

    init(_ broker: MemoryBroker) { self.broker = broker }

    var calls: [[String: Int]] { state.withLock { $0.calls } }
    func refuse(_ topic: String?) { state.withLock { $0.refused = topic } }

    func publish(_ records: [KafkaOutgoingRecord]) async throws -> [KafkaDeliveryReport] {
        let refused = state.withLock { state in
            state.calls.append(records.reduce(into: [:]) { $0[$1.topic, default: 0] += 1 })
            return state.refused.map { topic in records.contains { $0.topic == topic } } ?? false
        }
        if refused { throw KafkaError(code: .timedOut, reason: "refused by the test") }
        return try await broker.publish(records)
    }
}
