import Foundation
import GRDB
import PartitionStore
import Shared

extension OrchestratorRetention {
    /// Forgets the pushes delivered longer ago than a notification can be opened (`PushReceiptsTable.retention`),
    /// through the `sent_at` index, `chunk` rows per transaction; returns how many went (docs/retention.md).
    package static func prunePushReceipts(_ database: PartitionDatabase, now: Date, chunk: Int = 5_000) async throws -> Int {
        let cutoff = now.addingTimeInterval(-PushReceiptsTable.retention)
        return try await database.pruneInChunks(chunk: chunk) { db, limit in
            try PushReceiptsTable(db).prune(before: cutoff, limit: limit)
        }
    }
}
