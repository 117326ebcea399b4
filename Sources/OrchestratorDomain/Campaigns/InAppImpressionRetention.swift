import Foundation
import GRDB
import PartitionStore
import Shared

extension PartitionDatabase {
    /// Forgets in-app impressions that no re-eligibility reads any more (docs/retention.md): `once` messages keep theirs;
    /// `{max, per}` ones, older than the period; `always`, and messages no longer configured, older than the dedupe
    /// window. Through the `(message_key, at)` index, `chunk` rows per transaction; returns how many went.
    package func pruneInAppImpressions(
        rules: EngagementRules, now: Date, dedupeWindow: TimeInterval, chunk: Int = 5_000
    ) async throws -> Int {
        var total = 0
        var after = ""
        while case let previous = after, let message = try await read({ db in try InAppImpressionsTable(db).message(after: previous) }) {
            after = message
            let kept: TimeInterval
            switch rules.config.inAppMessages[message]?.reeligibility {
            case .once?: continue
            case .limit(_, let period)?: kept = period
            case .always?, nil: kept = dedupeWindow
            }
            let cutoff = WireTime.format(now.addingTimeInterval(-kept))
            total += try await pruneInChunks(chunk: chunk) { db, limit in
                try InAppImpressionsTable(db).prune(message: message, before: cutoff, limit: limit)
            }
        }
        return total
    }
}
