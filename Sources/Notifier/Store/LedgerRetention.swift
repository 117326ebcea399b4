import Foundation
import GRDB
import PartitionStore
import Shared

/// What the ledger forgets: rows of targets that are done (sent, failed, suppressed) and sends resolved with no target
/// still waiting, once older than the retention (the dedupe window). Each through its partial index, `limit` rows per
/// call (the caller runs one transaction per call).
extension NotifierStore {
    static func pruneFinishedTargets(_ db: Database, before cutoff: Date, limit: Int) throws -> Int {
        try db.execute(
            sql: """
                DELETE FROM ledger WHERE (send_id, target_id) IN (
                    SELECT send_id, target_id FROM ledger
                    WHERE state IN ('sent', 'failed', 'suppressed') AND updated_at < ? LIMIT ?)
                """, arguments: [WireTime.format(cutoff), limit])
        return db.changesCount
    }

    static func pruneResolvedSends(_ db: Database, before cutoff: Date, limit: Int) throws -> Int {
        try db.execute(
            sql: """
                DELETE FROM sends WHERE send_id IN (
                    SELECT send_id FROM sends WHERE state = 'resolved' AND received_at < ?
                    AND NOT EXISTS (SELECT 1 FROM ledger WHERE ledger.send_id = sends.send_id) LIMIT ?)
                """, arguments: [WireTime.format(cutoff), limit])
        return db.changesCount
    }

    /// The indexes the prunes read (notifier migration v5).
    static let retentionIndexesSQL = """
        CREATE INDEX ledger_finished ON ledger (updated_at) WHERE state IN ('sent', 'failed', 'suppressed');
        CREATE INDEX sends_resolved ON sends (received_at) WHERE state = 'resolved';
        """
}

extension NotifierPartitions {
    /// Prunes the ledger and the sends of every open partition (`NotifierStore.pruneFinishedTargets`,
    /// `pruneResolvedSends`); returns how many rows went.
    func purgeSends(before cutoff: Date, chunk: Int = 5_000) async throws -> Int {
        var purged = 0
        for number in await owner.runningPartitions {
            purged += try await owner.run(on: number) { database in
                let targets = try await database.pruneInChunks(chunk: chunk) { db, limit in
                    try NotifierStore.pruneFinishedTargets(db, before: cutoff, limit: limit)
                }
                let sends = try await database.pruneInChunks(chunk: chunk) { db, limit in
                    try NotifierStore.pruneResolvedSends(db, before: cutoff, limit: limit)
                }
                return targets + sends
            } ?? 0
        }
        return purged
    }
}
