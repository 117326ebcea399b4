import Foundation
import GRDB
import PartitionStore
import Shared

extension OrchestratorRetention {
    /// Forgets the ended journey instances no re-entry rule reads any more (docs/retention.md), as campaign decisions
    /// are: `reentry: never` keeps them (one per profile and journey: the table does not grow with time);
    /// `{after: P}`, those that entered longer ago than P (and than the dedupe window); `{max_concurrent: K}`, which
    /// counts only the instances in flight, and journeys no longer configured, those older than the dedupe window,
    /// within which a replayed entry must still find its instance. In-flight instances are never pruned.
    package static func pruneJourneyInstances(
        _ database: PartitionDatabase, rules: EngagementRules, now: Date, dedupeWindow: TimeInterval, chunk: Int = 5_000
    ) async throws -> Int {
        try await pruneByReeligibility(
            database, now: now, dedupeWindow: dedupeWindow, limitFloor: dedupeWindow, chunk: chunk,
            next: { db, after in try JourneyInstancesTable(db).journeyWithEnded(after: after) },
            reeligibility: { key in
                switch rules.config.journeys[key]?.reentry {
                case .never?: .once
                case .after(let period)?: .limit(count: 1, period: period)
                case .maxConcurrent?, nil: .always
                }
            },
            prune: { db, journey, cutoff, limit in try JourneyInstancesTable(db).pruneEnded(journey: journey, enteredBefore: cutoff, limit: limit) })
    }
}
