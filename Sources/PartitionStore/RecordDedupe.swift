import Foundation
import GRDB
import Shared

/// Record ids applied, per scope (a project), remembered for the dedupe window: a write replayed by a client or
/// produced twice upstream is a no-op.
package enum RecordDedupe {
    /// The table, for the service's first migration.
    package static let tableSQL = """
        CREATE TABLE applied_records (
            project TEXT NOT NULL, record_id TEXT NOT NULL, applied_at TEXT NOT NULL,
            PRIMARY KEY (project, record_id)) WITHOUT ROWID;
        """

    /// The index the prune reads (a later migration of a service that has the table).
    package static let indexSQL = """
        CREATE INDEX IF NOT EXISTS applied_records_by_time ON applied_records (applied_at);
        """

    /// Remembers a record id; false when it was applied before (a replay, which is then a no-op).
    package static func firstTime(_ db: Database, scope: String, id: String, at: Date = Date()) throws -> Bool {
        try db.executeCached(
            sql: "INSERT OR IGNORE INTO applied_records (project, record_id, applied_at) VALUES (?, ?, ?)",
            arguments: [scope, id, WireTime.format(at)])
        return db.changesCount == 1
    }

    /// Forgets the record ids of `scope` that start with `prefix` (an erased profile's writes, whose ids name it);
    /// returns how many.
    @discardableResult
    package static func forget(_ db: Database, scope: String, prefix: String) throws -> Int {
        try db.execute(
            sql: "DELETE FROM applied_records WHERE project = ? AND substr(record_id, 1, length(?)) = ?",
            arguments: [scope, prefix, prefix])
        return db.changesCount
    }

    /// Whether the record id was applied (within the dedupe window): a read that names a client's write waits for it.
    package static func applied(_ db: Database, scope: String, id: String) throws -> Bool {
        try Bool.fetchOne(
            db.cachedStatement(sql: "SELECT 1 FROM applied_records WHERE project = ? AND record_id = ?"), arguments: [scope, id]) != nil
    }
}

extension PartitionDatabase {
    /// Forgets record ids applied before `cutoff` (the dedupe window); returns how many. Through the index on
    /// `applied_at`, `chunk` rows per transaction, so that a day's worth of ids never holds the writer for long.
    @discardableResult
    package func pruneApplied(before cutoff: Date, chunk: Int = 5_000) async throws -> Int {
        try await pruneInChunks(chunk: chunk) { db, limit in
            try db.execute(
                sql: """
                    DELETE FROM applied_records WHERE (project, record_id) IN (
                        SELECT project, record_id FROM applied_records WHERE applied_at < ? LIMIT ?)
                    """, arguments: [WireTime.format(cutoff), limit])
            return db.changesCount
        }
    }

    /// Runs `delete` (which deletes at most `limit` rows and says how many) in one transaction after another until it
    /// deletes fewer than `chunk`; returns the total.
    package func pruneInChunks(chunk: Int, _ delete: @escaping @Sendable (Database, Int) throws -> Int) async throws -> Int {
        var total = 0
        while true {
            let deleted = try await write { db in try delete(db, chunk) }
            total += deleted
            if deleted < chunk { return total }
        }
    }
}
