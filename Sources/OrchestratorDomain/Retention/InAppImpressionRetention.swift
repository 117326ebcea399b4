import Foundation
import GRDB
import PartitionStore
import Shared

extension OrchestratorRetention {
    /// Forgets in-app impressions that no re-eligibility reads any more (docs/retention.md): `once` messages keep theirs;
    /// `{max, per}` ones, older than the period; `always`, and messages no longer configured, older than the dedupe
    /// window. Through the `(message_key, at)` index, `chunk` rows per transaction; returns how many went.
    package static func pruneInAppImpressions(
        _ database: PartitionDatabase, rules: EngagementRules, now: Date, dedupeWindow: TimeInterval, chunk: Int = 5_000
    ) async throws -> Int {
        try await pruneByReeligibility(
            database, now: now, dedupeWindow: dedupeWindow, chunk: chunk,
            next: { db, after in try InAppImpressionsTable(db).message(after: after) },
            reeligibility: { rules.config.inAppMessages[$0]?.reeligibility },
            prune: { db, message, cutoff, limit in try InAppImpressionsTable(db).prune(message: message, before: cutoff, limit: limit) })
    }
}
