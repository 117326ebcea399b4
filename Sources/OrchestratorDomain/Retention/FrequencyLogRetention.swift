import Foundation
import GRDB
import PartitionStore
import Shared

extension OrchestratorRetention {
    /// Forgets frequency-log rows older than every project's longest cap period (all of them when no project has
    /// caps), through the `at` index, `chunk` rows per transaction; returns how many went (docs/retention.md).
    package static func pruneFrequencyLog(_ database: PartitionDatabase, rules: EngagementRules, now: Date, chunk: Int = 5_000) async throws -> Int {
        let cutoff = now.addingTimeInterval(-rules.config.longestFrequencyCap)
        return try await database.pruneInChunks(chunk: chunk) { db, limit in
            try FrequencyLogTable(db).prune(before: cutoff, limit: limit)
        }
    }
}
