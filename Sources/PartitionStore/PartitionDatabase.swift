import Foundation
import GRDB
import Logging
import Shared
import Synchronization

/// One SQLite database per owned partition number (every topic a service reads shares the partition number). A batch
/// is applied in one transaction that also stores the partition's next offsets and the outbox records the batch
/// produced: state, position and output change together or not at all.
///
/// Generic: the service's migrator brings its own tables, after `coreTablesSQL` (offsets and outbox) and, where it
/// dedupes record ids, `RecordDedupe.tableSQL`.
package struct PartitionDatabase: Sendable {
    package let partition: Int32
    package let path: String
    /// The changelog topic every row change also goes to (`ChangelogCapture`); nil: changes are not captured.
    package let changelogTopic: String?
    private let pool: DatabasePool
    private let readTagSlot = ReadTagSlot()
    /// What the broker acknowledged of the outbox and the changelog, deleted by the next write (`ProducedMarks`).
    private let marks = ProducedMarks()

    package static func fileName(partition: Int32) -> String {
        "partition-\(String(format: "%03d", partition)).sqlite"
    }

    /// Opens (creating if needed) and migrates the partition's database in `directory` with the service's migrator;
    /// with a `changelog` topic, installs the capture of every row change for it.
    package static func open(
        directory: String, partition: Int32, migrator: DatabaseMigrator, changelog: String? = nil
    ) throws -> PartitionDatabase {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let path = (directory as NSString).appendingPathComponent(fileName(partition: partition))
        var configuration = Configuration()
        configuration.prepareDatabase { db in
            // WAL with synchronous=NORMAL: a power loss may drop the last transactions, but then state, offsets and
            // outbox drop together and Kafka redelivers from the older offset. A process crash loses nothing.
            try db.execute(sql: "PRAGMA synchronous = NORMAL")
            // The changelog's capture triggers call it (`TableShape.imageJSON`).
            db.add(function: ChangelogCapture.isUTF8)
        }
        let pool = try DatabasePool(path: path, configuration: configuration)
        try migrator.migrate(pool)
        if changelog != nil { try pool.write { try ChangelogCapture.install($0) } }
        // A reader connection opened now (its schema read), not by the first read an operator waits for: the first
        // page of `herald journey show` took 200 ms over 12 fresh partitions, the next ones 5 ms.
        try pool.read { _ in }
        return PartitionDatabase(partition: partition, path: path, changelogTopic: changelog, pool: pool)
    }

    /// Bounds the memory SQLite takes in this process, all partitions and connections together (`PRAGMA
    /// soft_heap_limit`, which is process-wide): past it, a connection's page cache reuses its pages instead of growing.
    /// Without it, each of the 16 × 6 connections of a service's pool may hold SQLite's default 2 MB of cache
    /// (docs/performance.md, "Memory").
    package static func limitMemory(bytes: Int64) throws {
        try DatabaseQueue().inDatabase { try $0.execute(sql: "PRAGMA soft_heap_limit = \(bytes)") }
    }

    /// Deletes a partition's database files (a database another owner's changelog has overtaken, restored anew).
    package static func remove(directory: String, partition: Int32) throws {
        let path = (directory as NSString).appendingPathComponent(fileName(partition: partition))
        for suffix in ["", "-wal", "-shm"] where FileManager.default.fileExists(atPath: path + suffix) {
            try FileManager.default.removeItem(atPath: path + suffix)
        }
    }

    /// The tables the batch, offset and outbox functions use; every service's first migration starts with them.
    package static let coreTablesSQL = """
        CREATE TABLE partition_offsets (
            topic TEXT PRIMARY KEY, next_offset INTEGER NOT NULL);
        CREATE TABLE outbox (
            id INTEGER PRIMARY KEY AUTOINCREMENT, topic TEXT NOT NULL, key TEXT NOT NULL, value BLOB,
            headers TEXT NOT NULL, created_at TEXT NOT NULL);
        """

    /// The next offset to read of each topic, as stored by the last committed batch.
    package func nextOffsets() async throws -> [String: Int64] {
        try await pool.read { db in
            var offsets: [String: Int64] = [:]
            for row in try Row.fetchAll(db, sql: "SELECT topic, next_offset FROM partition_offsets") {
                offsets[row["topic"]] = row["next_offset"]
            }
            return offsets
        }
    }

    /// Applies `records` (all of this partition, in offset order) in one transaction: each record through `apply`,
    /// then the next offsets. `apply` returns the outbox records to write. Returns what the outbox now holds from this
    /// batch, for the caller to produce.
    package func applyBatch(
        _ records: [KafkaRecord],
        apply: @escaping @Sendable (Database, KafkaRecord) throws -> [PendingOutput]
    ) async throws -> [OutboxRecord] {
        try await applyBatchMarked(records, apply: apply, finish: nil as BatchFinish<Void>?).outbox
    }

    /// `applyBatch(_:apply:)`, with `finish` run last in the same transaction (after the records, before the offsets):
    /// work the batch makes due that is cheaper done now than in a transaction of its own (the notifier claims the
    /// sends a batch brought). Returns the outbox records, `finish`'s result, and where the transaction ends in the
    /// changelog (`writeWithOutboxLogged`).
    private func applyBatchMarked<T: Sendable>(
        _ records: [KafkaRecord],
        apply: @escaping @Sendable (Database, KafkaRecord) throws -> [PendingOutput],
        finish: BatchFinish<T>?
    ) async throws -> (outbox: [OutboxRecord], finished: T?, changelogEnd: Int64?) {
        let ((outbox, finished), end) = try await writeMarked { db in
            var outbox: [OutboxRecord] = []
            var next: [String: Int64] = [:]
            for record in records {
                for output in try apply(db, record) {
                    outbox.append(try Outbox.insert(db, output))
                }
                next[record.topic] = record.offset + 1
            }
            var finished: T?
            if let finish {
                let (result, outputs) = try finish(db)
                finished = result
                for output in outputs { outbox.append(try Outbox.insert(db, output)) }
            }
            // Cached: compiling it also compiles the changelog's capture triggers (a tenth of the orchestrator's CPU at
            // 250 events/s when it was compiled per batch, docs/performance.md).
            for (topic, offset) in next {
                try db.executeCached(
                    sql: """
                        INSERT INTO partition_offsets (topic, next_offset) VALUES (?, ?)
                        ON CONFLICT (topic) DO UPDATE SET next_offset = excluded.next_offset
                        """, arguments: [topic, offset])
            }
            return (outbox, finished)
        }
        return (outbox, finished, end)
    }

    /// A batch's last step, in its transaction after its records: a result, and the outputs to write with it.
    package typealias BatchFinish<T> = @Sendable (Database) throws -> (T, [PendingOutput])

    /// What a batch left: its outbox records, the records that went to the dead letters instead of being applied, and
    /// what its `finish` step returned with the transaction's end in the changelog (nil when the batch was applied
    /// record by record: the step did not run).
    package struct AppliedBatch<Finished: Sendable>: Sendable {
        package var outbox: [OutboxRecord] = []
        package var deadLettered: [(partition: TopicPartition, offset: Int64, reason: String)] = []
        package var finished: (result: Finished, changelogEnd: Int64?)?
    }

    /// Applies a batch in one transaction as `applyBatch(_:apply:)` does, `finish` last in it; when a record fails for
    /// a reason of its own (the code rejects it: not `ApplyFailure.isStorage`), applies the records one by one without
    /// `finish`, and writes the dead letter `deadLetter` makes of each that fails, in its place, with its offset: the
    /// partition goes on past it. An error of the database is thrown (the owner pauses the partition): a full disk must
    /// not turn records into dead letters. A `finish` that throws fails the transaction as a record would.
    package func applyBatch<T: Sendable>(
        _ records: [KafkaRecord],
        apply: @escaping @Sendable (Database, KafkaRecord) throws -> [PendingOutput],
        deadLetter: @escaping @Sendable (KafkaRecord, String) -> PendingOutput,
        finish: BatchFinish<T>? = nil as BatchFinish<Void>?
    ) async throws -> AppliedBatch<T> {
        do {
            let applied = try await applyBatchMarked(records, apply: apply, finish: finish)
            var result = AppliedBatch<T>(outbox: applied.outbox)
            if let finished = applied.finished { result.finished = (finished, applied.changelogEnd) }
            return result
        } catch let error where !ApplyFailure.isStorage(error) {
            var result = AppliedBatch<T>()
            for record in records {
                do {
                    result.outbox += try await applyBatch([record], apply: apply)
                } catch let error where !ApplyFailure.isStorage(error) {
                    let reason = "\(error)"
                    result.outbox += try await applyBatch([record]) { _, record in [deadLetter(record, reason)] }
                    result.deadLettered.append((record.topicPartition, record.offset, reason))
                }
            }
            return result
        }
    }

    /// Runs `body` in a write transaction and writes what it returns to the outbox; returns the outbox records.
    package func writeWithOutbox<T: Sendable>(
        _ body: @escaping @Sendable (Database) throws -> (T, [PendingOutput])
    ) async throws -> (T, [OutboxRecord]) {
        let written = try await writeWithOutboxLogged(body)
        return (written.result, written.outbox)
    }

    /// As `writeWithOutbox`, and where the transaction ends in the changelog: its commit record's sequence number (nil
    /// without a changelog, or when the transaction changed nothing), which `PartitionOwner.changelogHolds` waits for.
    package func writeWithOutboxLogged<T: Sendable>(
        _ body: @escaping @Sendable (Database) throws -> (T, [PendingOutput])
    ) async throws -> (result: T, outbox: [OutboxRecord], changelogEnd: Int64?) {
        let ((result, outbox), end) = try await writeMarked { db in
            let (result, outputs) = try body(db)
            return (result, try outputs.map { try Outbox.insert(db, $0) })
        }
        return (result, outbox, end)
    }

    /// Outbox records not yet produced, oldest first (replayed after a restart).
    package func pendingOutbox(limit: Int = 10_000) async throws -> [OutboxRecord] {
        let after = marks.produced.outbox
        return try await pool.read { db in try Outbox.pending(db, after: after, limit: limit) }
    }

    /// Produces every pending outbox record, oldest first, and marks those the publisher acknowledged produced; then the
    /// changelog records (unless `changelog` is false: a lost partition's new owner writes its changelog now). Throws
    /// when the broker does not answer; what is left is produced by the next call.
    ///
    /// Each round reads both queues past what was marked produced, at one moment (one read transaction), produces the
    /// outbox's oldest chunk, then, if that was all the outbox held, one chunk of the changelog up to that moment: a
    /// transaction writes both at once, so the changelog never holds a transaction whose outputs were not produced, and
    /// a restored state never skips an output (outputs produced whose changelog was not are decided again, with the
    /// same ids, and deduped downstream). The changelog goes one chunk per round, so that outputs written meanwhile go
    /// first: a burst of new profiles (nine changelog records each) does not hold the sends decided after it. What the
    /// broker acknowledged is marked (`ProducedMarks`) and deleted by the partition's next write transaction, not by a
    /// transaction of its own (issue 58): a round is one read, whatever it holds. The rounds go on while one was cut by a
    /// chunk's size: what was committed before the call has gone out when this returns, and what a transaction commits
    /// meanwhile goes with the flush its writer asks for (`PartitionOwner.scheduleFlush`), so that a flush at a low rate
    /// is one round, not a round and a look that finds nothing (docs/performance.md).
    ///
    /// A record that can never be produced (too large, invalid) is replaced by `unproducible(record, error)`, a dead
    /// letter without its value, so that it does not hold the partition's other outputs forever. `produced` is told the
    /// sequence number through which the changelog went out, after each chunk.
    package func produceOutbox(
        with publisher: any OutboxPublisher, changelog: Bool = true,
        unproducible: (KafkaOutgoingRecord, KafkaError) -> KafkaOutgoingRecord = PartitionDatabase.defaultStub,
        produced: @Sendable (Int64) async -> Void = { _ in }
    ) async throws {
        let topic = changelog ? changelogTopic : nil
        while true {
            let after = marks.produced
            let round = try await pool.read { db in try ProduceRound(db, changelog: topic != nil, after: after) }
            guard !round.outbox.isEmpty || !round.changes.isEmpty else { return }
            if !round.outbox.isEmpty {
                _ = try await publisher.publishOrStub(round.outbox.map(\.outgoing), stub: unproducible)
            }
            // The outbox went out: it is marked even when the changelog's produce fails.
            var changelogEnd: (seq: Int64, nextOffset: Int64, count: Int)?
            var failure: (any Error)?
            if let topic, let last = round.changes.last {
                // A row image that can never be produced is lost to a restore (the row's next change carries it
                // again); a dead letter says so rather than the partition's outputs stopping behind it.
                let kept = ChangelogCapture.lastImagePerTransaction(round.changes)
                let records = kept.map {
                    ChangelogEntry($0.change, writer: round.writer).record(topic: topic, partition: partition)
                }
                do {
                    let reports = try await publisher.publishOrStub(records, stub: unproducible)
                    changelogEnd = (last.seq, (reports.compactMap { $0?.offset }.max() ?? -1) + 1, kept.count)
                } catch {
                    failure = error
                }
            }
            marks.produced(outbox: round.outbox.last?.id, changelog: changelogEnd.map { ($0.seq, $0.nextOffset) })
            Outbox.countProduced(round.outbox)
            if let failure { throw failure }
            if let topic, let changelogEnd {
                Outbox.countProduced(changelogEnd.count, topic: topic)
                await produced(changelogEnd.seq)
            }
            guard round.cut else { return }
        }
    }

    /// Deletes what the broker acknowledged and no write transaction deleted yet, if it has waited `after` or longer:
    /// the relay's round for a partition with no write for a while, and a revocation before its database closes (so
    /// that the database opened again does not produce it twice).
    package func forgetProduced(after: Duration = .zero) async throws {
        guard let waiting = marks.waiting, waiting >= after else { return }
        let marks = self.marks
        if let deleted = try await pool.write({ db in try marks.forget(db) }) { marks.deleted(deleted) }
    }

    /// What one round of `produceOutbox` produces, read at one moment: the outbox's oldest records past what was marked
    /// produced, and, when that is all the outbox holds, the changelog's oldest chunk with the writer id its records
    /// carry.
    private struct ProduceRound: Sendable {
        static let outboxChunk = 1000
        static let changelogChunk = 5000
        var outbox: [OutboxRecord]
        var changes: [ChangelogCapture.Pending] = []
        var writer = ""

        init(_ db: Database, changelog: Bool, after marks: ProducedMarks.Marks) throws {
            outbox = try Outbox.pending(db, after: marks.outbox, limit: Self.outboxChunk)
            // More outputs than a chunk: the changelog waits for a round that reaches the outbox's end.
            guard changelog, outbox.count < Self.outboxChunk else { return }
            changes = try ChangelogCapture.pending(db, after: marks.changelog, limit: Self.changelogChunk)
            if !changes.isEmpty { writer = try ChangelogCapture.writer(db) }
        }

        /// Whether a chunk's size cut the round: more was there when it read.
        var cut: Bool { outbox.count == Self.outboxChunk || changes.count == Self.changelogChunk }
    }

    /// The dead letter of an output that can never be produced, for callers that have no service name to give.
    package static func defaultStub(_ record: KafkaOutgoingRecord, _ error: KafkaError) -> KafkaOutgoingRecord {
        record.unproducibleStub(service: "herald", error: error, logger: Logger(label: "herald.partition-store"))
    }

    /// Whether the outbox or the changelog holds records not produced yet.
    package func hasUnproduced() async throws -> Bool {
        let captured = changelogTopic != nil
        let after = marks.produced
        return try await pool.read { db in
            if try Bool.fetchOne(db, sql: "SELECT EXISTS (SELECT 1 FROM outbox WHERE id > ?)", arguments: [after.outbox]) == true {
                return true
            }
            guard captured else { return false }
            return try Bool.fetchOne(db, sql: "SELECT EXISTS (SELECT 1 FROM changelog WHERE seq > ?)", arguments: [after.changelog])
                ?? false
        }
    }

    /// Forgets outbox records the broker acknowledged.
    package func markProduced(_ ids: [Int64]) async throws {
        guard !ids.isEmpty else { return }
        try await pool.write { db in try Outbox.delete(db, ids: ids) }
    }

    /// Runs `body` in a write transaction. With a changelog, a transaction that changed anything ends with a commit
    /// record there.
    package func write<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws -> T {
        try await writeMarked(body).result
    }

    /// `write`, and the sequence number of the commit record it added (nil: none). Each deletes first what the broker
    /// acknowledged of the outbox and the changelog since the last write (`ProducedMarks`), which is neither counted as
    /// the transaction's change nor captured.
    private func writeMarked<T: Sendable>(
        _ body: @escaping @Sendable (Database) throws -> T
    ) async throws -> (result: T, changelogEnd: Int64?) {
        let (marks, captured) = (self.marks, changelogTopic != nil)
        let (result, end, deleted) = try await pool.write { db -> (T, Int64?, ProducedMarks.Marks?) in
            let deleted = try marks.forget(db)
            guard captured else { return (try body(db), nil, deleted) }
            let before = db.totalChangesCount
            let result = try body(db)
            guard db.totalChangesCount != before else { return (result, nil, deleted) }
            try ChangelogCapture.markCommit(db)
            return (result, db.lastInsertedRowID, deleted)
        }
        if let deleted { marks.deleted(deleted) }
        return (result, end)
    }

    /// A write transaction that adds no commit record (the changelog's own bookkeeping, a restore).
    func writeUnmarked<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws -> T {
        try await pool.write(body)
    }

    /// A write transaction without commit record and without foreign-key enforcement (a restore writes a transaction's
    /// rows in log order, a child row possibly before its parent, and a replaced parent must not cascade).
    func writeRestoring<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws -> T {
        try await pool.writeWithoutTransaction { db in
            try db.execute(sql: "PRAGMA foreign_keys = OFF")
            defer { try? db.execute(sql: "PRAGMA foreign_keys = ON") }
            var result: T?
            try db.inTransaction {
                result = try body(db)
                return .commit
            }
            return result!
        }
    }

    package func read<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws -> T {
        try await pool.read(body)
    }

    /// The tags of the last answers to reads of this database, once `keepReadTags` started keeping them (nil: reads are
    /// not cached).
    package var readTags: ReadTagCache? { readTagSlot.cache.withLock { $0 } }

    /// Starts keeping read tags (`ReadTagCache`), dropped when their owner's rows change (`RowChangeWatch` on the
    /// writer); once per database: a second call returns the first cache.
    @discardableResult
    package func keepReadTags(owners: RowOwners, capacity: Int) async throws -> ReadTagCache {
        let slot = readTagSlot
        // On the writer: the one connection the watch goes on, one call at a time.
        return try await pool.writeWithoutTransaction { db in
            if let kept = slot.cache.withLock({ $0 }) { return kept }
            let cache = ReadTagCache(capacity: capacity)
            try RowChangeWatch.install(db, owners: owners) { cache.changed($0) }
            slot.cache.withLock { $0 = cache }
            return cache
        }
    }

    /// Runs `body` on the writer connection, outside any transaction: to add what only the connection that writes needs
    /// (a function its temporary triggers call).
    package func prepareWriter(_ body: @escaping @Sendable (Database) throws -> Void) async throws {
        try await pool.writeWithoutTransaction(body)
    }

    /// Closes the connections (the pool's deinit would too; this makes the moment explicit).
    package func close() throws { try pool.close() }
}

/// Where a database keeps its read tags: shared by the copies of its `PartitionDatabase` value.
private final class ReadTagSlot: Sendable {
    let cache = Mutex<ReadTagCache?>(nil)
}

extension Database {
    /// Runs `sql` through GRDB's statement cache: each statement is compiled once per connection.
    package func executeCached(sql: String, arguments: StatementArguments = StatementArguments()) throws {
        try cachedStatement(sql: sql).execute(arguments: arguments)
    }
}
