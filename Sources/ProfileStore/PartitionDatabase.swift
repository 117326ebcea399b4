import Foundation
import GRDB
import Metrics
import Shared

/// A record to produce after the transaction that created it commits (the outbox of the design brief).
package struct OutboxRecord: Sendable, Equatable {
    package var id: Int64
    package var topic: String
    package var key: String
    /// nil: a tombstone.
    package var value: [UInt8]?
    package var headers: [KafkaHeader]
}

/// One SQLite database per owned partition number (all topics the orchestrator reads share the partition number).
/// A batch is applied in one transaction that also stores the partition's next offsets and the outbox records the batch
/// produced: state, position and output change together or not at all.
package struct PartitionDatabase: Sendable {
    package let partition: Int32
    package let path: String
    private let pool: DatabasePool

    package static func fileName(partition: Int32) -> String {
        "partition-\(String(format: "%03d", partition)).sqlite"
    }

    /// Opens (creating if needed) and migrates the partition's database in `directory`.
    package static func open(
        directory: String, partition: Int32, migrator: DatabaseMigrator = PartitionDatabase.migrator
    ) throws -> PartitionDatabase {
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

    /// The tables the batch, offset and outbox functions below use; another service's migrator starts with them.
    package static let coreTablesSQL = """
        CREATE TABLE partition_offsets (
            topic TEXT PRIMARY KEY, next_offset INTEGER NOT NULL);
        CREATE TABLE outbox (
            id INTEGER PRIMARY KEY AUTOINCREMENT, topic TEXT NOT NULL, key TEXT NOT NULL, value BLOB,
            headers TEXT NOT NULL, created_at TEXT NOT NULL);
        """

    /// Named, append-only migrations (the orchestrator's).
    package static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1: offsets, dedupe, outbox, profiles, events") { db in
            try db.execute(
                sql: coreTablesSQL + """
                    CREATE TABLE applied_records (
                        project TEXT NOT NULL, record_id TEXT NOT NULL, applied_at TEXT NOT NULL,
                        PRIMARY KEY (project, record_id)) WITHOUT ROWID;
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
        migrator.registerMigration("v2: installations, identity links, token owners, push changelog") { db in
            try db.execute(
                sql: """
                    CREATE TABLE installations (
                        profile_key TEXT NOT NULL REFERENCES profiles(profile_key) ON DELETE CASCADE,
                        installation_id TEXT NOT NULL, project TEXT NOT NULL, app TEXT, dev INTEGER NOT NULL DEFAULT 0,
                        token TEXT, environment TEXT, token_updated_at TEXT, notification_permission TEXT,
                        opted_out INTEGER NOT NULL DEFAULT 0, opt_changed_at TEXT,
                        geoip INTEGER, device_model_collection INTEGER,
                        app_version TEXT, app_build TEXT, os_version TEXT, sdk_version TEXT, device_brand TEXT,
                        device_model TEXT, detected_language TEXT, detected_region TEXT, timezone TEXT,
                        latitude REAL, longitude REAL, location_accuracy REAL, location_at TEXT,
                        install_date TEXT NOT NULL, last_visit_at TEXT NOT NULL, last_push_at TEXT,
                        updated_at TEXT NOT NULL,
                        PRIMARY KEY (profile_key, installation_id)) WITHOUT ROWID;
                    CREATE TABLE installation_links (
                        project TEXT NOT NULL, installation_id TEXT NOT NULL, custom_id TEXT, linked_at TEXT NOT NULL,
                        PRIMARY KEY (project, installation_id)) WITHOUT ROWID;
                    CREATE TABLE token_owners (
                        project TEXT NOT NULL, token TEXT NOT NULL, profile_key TEXT NOT NULL,
                        installation_id TEXT NOT NULL, since TEXT NOT NULL,
                        PRIMARY KEY (project, token)) WITHOUT ROWID;
                    CREATE TABLE push_changelog (
                        id INTEGER PRIMARY KEY AUTOINCREMENT,
                        profile_key TEXT NOT NULL REFERENCES profiles(profile_key) ON DELETE CASCADE,
                        installation_id TEXT NOT NULL, at TEXT NOT NULL, change TEXT NOT NULL, token TEXT,
                        detail TEXT);
                    CREATE INDEX push_changelog_by_profile ON push_changelog (profile_key, id);
                    ALTER TABLE profiles ADD COLUMN email_bounced_at TEXT;
                    """)
        }
        migrator.registerMigration("v3: segment membership, timers, campaign history") { db in
            try db.execute(
                sql: """
                    CREATE TABLE segment_members (
                        segment_key TEXT NOT NULL, profile_key TEXT NOT NULL, since TEXT NOT NULL,
                        PRIMARY KEY (segment_key, profile_key)) WITHOUT ROWID;
                    CREATE INDEX segment_members_by_profile ON segment_members (profile_key);
                    CREATE TABLE segment_state (
                        segment_key TEXT PRIMARY KEY, condition TEXT NOT NULL, backfilled_at TEXT NOT NULL);
                    CREATE TABLE timers (
                        profile_key TEXT NOT NULL, kind TEXT NOT NULL, ref TEXT NOT NULL, due_at TEXT NOT NULL,
                        payload TEXT, PRIMARY KEY (profile_key, kind, ref)) WITHOUT ROWID;
                    CREATE INDEX timers_by_due ON timers (due_at);
                    CREATE TABLE campaign_history (
                        campaign_key TEXT NOT NULL, profile_key TEXT NOT NULL, occurrence TEXT NOT NULL, at TEXT NOT NULL,
                        PRIMARY KEY (campaign_key, profile_key, occurrence)) WITHOUT ROWID;
                    CREATE TABLE campaign_state (
                        campaign_key TEXT PRIMARY KEY, last_occurrence TEXT NOT NULL);
                    """)
        }
        return migrator
    }

    /// Applies the records an earlier version kept in `deferred_records` (ops it did not implement yet), in their
    /// order, in one transaction with their outbox records; returns the outbox records for the caller to produce.
    package func applyDeferred(
        apply: @escaping @Sendable (Database, KafkaRecord) throws -> [PendingOutput]
    ) async throws -> [OutboxRecord] {
        try await pool.write { db in
            var outbox: [OutboxRecord] = []
            let rows = try Row.fetchAll(
                db, sql: "SELECT topic, offset, key, value FROM deferred_records ORDER BY topic, offset")
            for row in rows {
                let key: String? = row["key"]
                let value: Data? = row["value"]
                let record = KafkaRecord(
                    topic: row["topic"], partition: partition, offset: row["offset"], key: key.map { Array($0.utf8) },
                    value: value.map { Array($0) })
                for output in try apply(db, record) { outbox.append(try Self.insertOutbox(db, output)) }
            }
            try db.execute(sql: "DELETE FROM deferred_records")
            return outbox
        }
    }

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

    /// Runs `body` in a write transaction and writes what it returns to the outbox; returns the outbox records.
    package func writeWithOutbox<T: Sendable>(
        _ body: @escaping @Sendable (Database) throws -> (T, [PendingOutput])
    ) async throws -> (T, [OutboxRecord]) {
        try await pool.write { db in
            let (result, outputs) = try body(db)
            return (result, try outputs.map { try Self.insertOutbox(db, $0) })
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
    package func pendingOutbox(limit: Int = 10_000) async throws -> [OutboxRecord] {
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

    /// Produces every pending outbox record, oldest first, and forgets those the broker acknowledged. Throws when the
    /// broker does not answer; what is left is produced by the next call.
    package func produceOutbox(with producer: KafkaProducer) async throws {
        while true {
            let pending = try await pendingOutbox(limit: 1000)
            guard !pending.isEmpty else { return }
            _ = try await producer.send(
                pending.map { KafkaOutgoingRecord(topic: $0.topic, key: Array($0.key.utf8), value: $0.value, headers: $0.headers) })
            try await markProduced(pending.map(\.id))
            Self.countProduced(pending)
        }
    }

    /// `herald_records_produced_total{topic}`: what the outbox delivered to the broker (send requests per channel,
    /// contact snapshots, reports, dead letters on `herald.dlq`…).
    private static func countProduced(_ records: [OutboxRecord]) {
        var counts: [String: Int] = [:]
        for record in records { counts[record.topic, default: 0] += 1 }
        for (topic, count) in counts {
            Counter(label: "herald_records_produced_total", dimensions: [("topic", topic)]).increment(by: count)
        }
    }

    /// Forgets outbox records the broker acknowledged.
    package func markProduced(_ ids: [Int64]) async throws {
        guard !ids.isEmpty else { return }
        try await pool.write { db in
            try db.execute(
                sql: "DELETE FROM outbox WHERE id IN (\(ids.map { _ in "?" }.joined(separator: ",")))",
                arguments: StatementArguments(ids))
        }
    }

    /// Forgets record ids applied before `cutoff` (the dedupe window); returns how many.
    @discardableResult
    package func pruneApplied(before cutoff: Date) async throws -> Int {
        try await pool.write { db in
            try db.execute(sql: "DELETE FROM applied_records WHERE applied_at < ?", arguments: [WireTime.format(cutoff)])
            return db.changesCount
        }
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

/// An output record produced by applying a record, before it has an outbox id.
package struct PendingOutput: Sendable, Equatable {
    package var topic: String
    package var key: String
    package var value: [UInt8]?
    package var headers: [KafkaHeader] = []

    package init(topic: String, key: String, value: [UInt8]?, headers: [KafkaHeader] = []) {
        self.topic = topic
        self.key = key
        self.value = value
        self.headers = headers
    }
}
