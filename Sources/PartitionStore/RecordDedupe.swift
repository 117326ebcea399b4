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

    /// Remembers a record id; false when it was applied before (a replay, which is then a no-op).
    package static func firstTime(_ db: Database, scope: String, id: String, at: Date = Date()) throws -> Bool {
        try db.executeCached(
            sql: "INSERT OR IGNORE INTO applied_records (project, record_id, applied_at) VALUES (?, ?, ?)",
            arguments: [scope, id, WireTime.format(at)])
        return db.changesCount == 1
    }
}

extension PartitionDatabase {
    /// Forgets record ids applied before `cutoff` (the dedupe window); returns how many.
    @discardableResult
    package func pruneApplied(before cutoff: Date) async throws -> Int {
        try await write { db in
            try db.execute(sql: "DELETE FROM applied_records WHERE applied_at < ?", arguments: [WireTime.format(cutoff)])
            return db.changesCount
        }
    }
}
