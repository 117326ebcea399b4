import Foundation
import GRDB
import PartitionStore
import Shared

extension OrchestratorRetention {
    /// Forgets campaign decisions that no rule reads any more (docs/retention.md):
    /// - `once`: kept (one row per profile: the table does not grow with time);
    /// - `{max, per}`: older than the period, and than the dedupe window;
    /// - `always`, and campaigns no longer in the configuration: older than the dedupe window, within which a replayed
    ///   trigger must still find its decision.
    /// Through the `(campaign_key, at)` index, `chunk` rows per transaction; returns how many went.
    package static func pruneCampaignHistory(
        _ database: PartitionDatabase, rules: EngagementRules, now: Date, dedupeWindow: TimeInterval, chunk: Int = 5_000
    ) async throws -> Int {
        try await pruneByReeligibility(
            database, now: now, dedupeWindow: dedupeWindow, limitFloor: dedupeWindow, chunk: chunk,
            next: { db, after in try CampaignHistoryTable(db).campaign(after: after) },
            reeligibility: { rules.config.campaigns[$0]?.reeligibility },
            prune: { db, campaign, cutoff, limit in try CampaignHistoryTable(db).prune(campaign: campaign, before: cutoff, limit: limit) })
    }
}
