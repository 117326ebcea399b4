import Foundation
import GRDB
import PartitionStore
import Shared

extension OrchestratorRetention {
    /// Forgets the cards that expired longer ago than `ContentCardsTable.retention` (their "received" records), through
    /// the `expires_at` index, `chunk` rows per transaction; returns how many went (docs/retention.md).
    package static func pruneContentCards(_ database: PartitionDatabase, now: Date, chunk: Int = 5_000) async throws -> Int {
        let cutoff = now.addingTimeInterval(-ContentCardsTable.retention)
        return try await database.pruneInChunks(chunk: chunk) { db, limit in
            try ContentCardsTable(db).prune(expiredBefore: cutoff, limit: limit)
        }
    }
}
