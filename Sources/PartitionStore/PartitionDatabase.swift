import Foundation
import GRDB
import Shared

/// One SQLite database per owned partition number (every topic a service reads shares the partition number). A batch
/// is applied in one transaction that also stores the partition's next offsets and the outbox records the batch
/// produced: state, position and output change together or not at all.
///
/// Generic: the service's migrator brings its own tables, after `coreTablesSQL` (offsets and outbox) and, where it
/// dedupes record ids, `RecordDedupe.tableSQL`.
package struct PartitionDatabase: Sendable {
    package let partition: Int32
    package let path: String
    private let pool: DatabasePool

    package static func fileName(partition: Int32) -> String {
        "partition-\(String(format: "%03d", partition)).sqlite"
    }

    /// Opens (creating if needed) and migrates the partition's database in `directory` with the service's migrator.
    package static func open(directory: String, partition: Int32, migrator: DatabaseMigrator) throws -> PartitionDatabase {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let path = (directory as NSString).appendingPathComponent(fileName(partition: partition))
        var configuration = Configuration()
        configuration.prepareDatabase { db in
            // WAL with synchronous=NORMAL: a power loss may drop the last transactions, but then state, offsets and
            // outbox drop together and Kafka redelivers from the older offset. A process crash loses nothing.
            try db.execute(sql: "PRAGMA synchronous = NORMAL")
        }
        let pool = try DatabasePool(path: path, configuration: configuration)
        try migrator.migrate(pool)
        return PartitionDatabase(partition: partition, path: path, pool: pool)
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
        try await pool.write { db in
            var outbox: [OutboxRecord] = []
            var next: [String: Int64] = [:]
            for record in records {
                for output in try apply(db, record) {
                    outbox.append(try Outbox.insert(db, output))
                }
                next[record.topic] = record.offset + 1
            }
            for (topic, offset) in next {
                try db.execute(
                    sql: """
                        INSERT INTO partition_offsets (topic, next_offset) VALUES (?, ?)
                        ON CONFLICT (topic) DO UPDATE SET next_offset = excluded.next_offset
                        """, arguments: [topic, offset])
            }
            return outbox
        }
    }

    /// Runs `body` in a write transaction and writes what it returns to the outbox; returns the outbox records.
    package func writeWithOutbox<T: Sendable>(
        _ body: @escaping @Sendable (Database) throws -> (T, [PendingOutput])
    ) async throws -> (T, [OutboxRecord]) {
        try await pool.write { db in
            let (result, outputs) = try body(db)
            return (result, try outputs.map { try Outbox.insert(db, $0) })
        }
    }

    /// Outbox records not yet produced, oldest first (replayed after a restart).
    package func pendingOutbox(limit: Int = 10_000) async throws -> [OutboxRecord] {
        try await pool.read { db in try Outbox.pending(db, limit: limit) }
    }

    /// Produces every pending outbox record, oldest first, and forgets those the publisher acknowledged. Throws when
    /// the broker does not answer; what is left is produced by the next call.
    package func produceOutbox(with publisher: any OutboxPublisher) async throws {
        while true {
            let pending = try await pendingOutbox(limit: 1000)
            guard !pending.isEmpty else { return }
            try await publisher.publish(pending.map(\.outgoing))
            try await markProduced(pending.map(\.id))
            Outbox.countProduced(pending)
        }
    }

    /// Forgets outbox records the broker acknowledged.
    package func markProduced(_ ids: [Int64]) async throws {
        guard !ids.isEmpty else { return }
        try await pool.write { db in try Outbox.delete(db, ids: ids) }
    }

    package func write<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws -> T {
        try await pool.write(body)
    }

    package func read<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws -> T {
        try await pool.read(body)
    }

    /// Closes the connections (the pool's deinit would too; this makes the moment explicit).
    package func close() throws { try pool.close() }
}

extension Database {
    /// Runs `sql` through GRDB's statement cache: each statement is compiled once per connection.
    package func executeCached(sql: String, arguments: StatementArguments = StatementArguments()) throws {
        try cachedStatement(sql: sql).execute(arguments: arguments)
    }
}
