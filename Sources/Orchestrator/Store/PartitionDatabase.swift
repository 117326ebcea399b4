import Foundation
import GRDB
import Shared

/// A record to produce after the transaction that created it commits (the outbox of the design brief).
struct OutboxRecord: Sendable, Equatable {
    var id: Int64
    var topic: String
    var key: String
    /// nil: a tombstone.
    var value: [UInt8]?
    var headers: [KafkaHeader]
}

/// One SQLite database per owned partition number (all topics the orchestrator reads share the partition number).
/// A batch is applied in one transaction that also stores the partition's next offsets and the outbox records the batch
/// produced: state, position and output change together or not at all.
struct PartitionDatabase: Sendable {
    let partition: Int32
    let path: String
    private let pool: DatabasePool

    static func fileName(partition: Int32) -> String {
        "partition-\(String(format: "%03d", partition)).sqlite"
    }

    /// Opens (creating if needed) and migrates the partition's database in `directory`.
    static func open(directory: String, partition: Int32) throws -> PartitionDatabase {
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

    /// Named, append-only migrations.
    static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1: offsets, dedupe, outbox, profiles, events") { db in
            try db.execute(
                sql: """
                    CREATE TABLE partition_offsets (
                        topic TEXT PRIMARY KEY, next_offset INTEGER NOT NULL);
                    CREATE TABLE applied_records (
                        project TEXT NOT NULL, record_id TEXT NOT NULL, applied_at TEXT NOT NULL,
                        PRIMARY KEY (project, record_id)) WITHOUT ROWID;
                    CREATE TABLE outbox (
                        id INTEGER PRIMARY KEY AUTOINCREMENT, topic TEXT NOT NULL, key TEXT NOT NULL, value BLOB,
                        headers TEXT NOT NULL, created_at TEXT NOT NULL);
                    CREATE TABLE deferred_records (
                        topic TEXT NOT NULL, offset INTEGER NOT NULL, key TEXT, value BLOB, op TEXT,
                        PRIMARY KEY (topic, offset));
                    CREATE TABLE profiles (
                        profile_key TEXT PRIMARY KEY, project TEXT NOT NULL, custom_id TEXT,
                        email TEXT, email_marketing TEXT, email_marketing_changed_at TEXT,
                        phone_number TEXT, sms_marketing TEXT, sms_marketing_changed_at TEXT,
                        language TEXT, region TEXT, timezone TEXT,
                        created_at TEXT NOT NULL, updated_at TEXT NOT NULL);
                    CREATE TABLE profile_attributes (
                        profile_key TEXT NOT NULL REFERENCES profiles(profile_key) ON DELETE CASCADE,
                        name TEXT NOT NULL, type TEXT NOT NULL, value TEXT NOT NULL, updated_at TEXT NOT NULL,
                        PRIMARY KEY (profile_key, name)) WITHOUT ROWID;
                    CREATE TABLE event_aggregates (
                        profile_key TEXT NOT NULL REFERENCES profiles(profile_key) ON DELETE CASCADE,
                        name TEXT NOT NULL, count INTEGER NOT NULL, first_at TEXT NOT NULL, last_at TEXT NOT NULL,
                        last_label TEXT, last_tags TEXT, last_attributes TEXT NOT NULL,
                        PRIMARY KEY (profile_key, name)) WITHOUT ROWID;
                    """)
        }
        return migrator
    }

    /// The next offset to read of each topic, as stored by the last committed batch.
    func nextOffsets() async throws -> [String: Int64] {
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
    func applyBatch(
        _ records: [KafkaRecord],
        apply: @escaping @Sendable (Database, KafkaRecord) throws -> [PendingOutput]
    ) async throws -> [OutboxRecord] {
        try await pool.write { db in
            var outbox: [OutboxRecord] = []
            var next: [String: Int64] = [:]
            for record in records {
                for output in try apply(db, record) {
                    outbox.append(try Self.insertOutbox(db, output))
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

    private static func insertOutbox(_ db: Database, _ output: PendingOutput) throws -> OutboxRecord {
        let headers = JSONValue.object(output.headers.map { JSONMember($0.name, $0.value.map { .string(String(decoding: $0, as: UTF8.self)) } ?? .null) })
        try db.cachedStatement(sql: "INSERT INTO outbox (topic, key, value, headers, created_at) VALUES (?, ?, ?, ?, ?)")
            .execute(arguments: [
                output.topic, output.key, output.value.map { Data($0) }, String(decoding: headers.serialized, as: UTF8.self),
                WireTime.format(Date()),
            ])
        return OutboxRecord(
            id: db.lastInsertedRowID, topic: output.topic, key: output.key, value: output.value, headers: output.headers)
    }

    /// Outbox records not yet produced, oldest first (replayed after a restart).
    func pendingOutbox(limit: Int = 10_000) async throws -> [OutboxRecord] {
        try await pool.read { db in
            try Row.fetchAll(db, sql: "SELECT id, topic, key, value, headers FROM outbox ORDER BY id LIMIT ?", arguments: [limit])
                .map { row in
                    let headersText: String = row["headers"]
                    var headers: [KafkaHeader] = []
                    if case .object(let members)? = try? JSONParser.parse(Array(headersText.utf8)) {
                        for member in members {
                            if case .string(let text) = member.value { headers.append(KafkaHeader(member.key, text)) }
                            else { headers.append(KafkaHeader(member.key, nil as [UInt8]?)) }
                        }
                    }
                    let value: Data? = row["value"]
                    return OutboxRecord(
                        id: row["id"], topic: row["topic"], key: row["key"], value: value.map { Array($0) }, headers: headers)
                }
        }
    }

    /// Forgets outbox records the broker acknowledged.
    func markProduced(_ ids: [Int64]) async throws {
        guard !ids.isEmpty else { return }
        try await pool.write { db in
            try db.execute(
                sql: "DELETE FROM outbox WHERE id IN (\(ids.map { _ in "?" }.joined(separator: ",")))",
                arguments: StatementArguments(ids))
        }
    }

    /// Forgets record ids applied before `cutoff` (the dedupe window); returns how many.
    @discardableResult
    func pruneApplied(before cutoff: Date) async throws -> Int {
        try await pool.write { db in
            try db.execute(sql: "DELETE FROM applied_records WHERE applied_at < ?", arguments: [WireTime.format(cutoff)])
            return db.changesCount
        }
    }

    func read<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws -> T {
        try await pool.read(body)
    }

    /// Closes the connections (the pool's deinit would too; this makes the moment explicit).
    func close() throws { try pool.close() }
}

/// An output record produced by applying a record, before it has an outbox id.
struct PendingOutput: Sendable, Equatable {
    var topic: String
    var key: String
    var value: [UInt8]?
    var headers: [KafkaHeader] = []
}
