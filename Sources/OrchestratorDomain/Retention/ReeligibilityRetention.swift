import Foundation
import GRDB
import PartitionStore
import Shared

extension OrchestratorRetention {
    /// Forgets the rows of a table kept per key for a re-eligibility rule (a campaign's decisions, an in-app message's
    /// impressions) once no rule reads them: `once` keys keep theirs; `{max, per}` ones, older than the period (and than
    /// `limitFloor`); `always`, and keys no longer configured, older than the dedupe window. The keys come from `next`
    /// (the first after a key, one index seek each), rows go through `prune` (key, cutoff, limit), `chunk` per
    /// transaction; returns how many went.
    static func pruneByReeligibility(
        _ database: PartitionDatabase, now: Date, dedupeWindow: TimeInterval, limitFloor: TimeInterval = 0, chunk: Int,
        next: @escaping @Sendable (Database, String) throws -> String?,
        reeligibility: (String) -> CampaignDefinition.Reeligibility?,
        prune: @escaping @Sendable (Database, String, Date, Int) throws -> Int
    ) async throws -> Int {
        var total = 0
        var after = ""
        while case let previous = after, let key = try await database.read({ db in try next(db, previous) }) {
            after = key
            let kept: TimeInterval
            switch reeligibility(key) {
            case .once?: continue
            case .limit(_, let period)?: kept = max(period, limitFloor)
            case .always?, nil: kept = dedupeWindow
            }
            let cutoff = now.addingTimeInterval(-kept)
            total += try await database.pruneInChunks(chunk: chunk) { db, limit in try prune(db, key, cutoff, limit) }
        }
        return total
    }
}
