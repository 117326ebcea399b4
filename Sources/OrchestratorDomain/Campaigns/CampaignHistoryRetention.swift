import Foundation
import GRDB
import PartitionStore
import Shared

extension PartitionDatabase {
    /// Forgets campaign decisions that no rule reads any more (docs/retention.md):
    /// - `once`: kept (one row per profile: the table does not grow with time);
    /// - `{max, per}`: older than the period, and than the dedupe window;
    /// - `always`, and campaigns no longer in the configuration: older than the dedupe window, within which a replayed
    ///   trigger must still find its decision.
    /// Through the `(campaign_key, at)` index, `chunk` rows per transaction; returns how many went.
    package func pruneCampaignHistory(
        rules: EngagementRules, now: Date, dedupeWindow: TimeInterval, chunk: Int = 5_000
    ) async throws -> Int {
        var total = 0
        var after = ""
        // The campaigns the table holds, one index seek each.
        while case let previous = after, let campaign = try await read({ db in try CampaignHistoryTable(db).campaign(after: previous) }) {
            after = campaign
            let kept: TimeInterval
            switch rules.config.campaigns[campaign]?.reeligibility {
            case .once?: continue
            case .limit(_, let period)?: kept = max(period, dedupeWindow)
            case .always?, nil: kept = dedupeWindow
            }
            let cutoff = WireTime.format(now.addingTimeInterval(-kept))
            total += try await pruneInChunks(chunk: chunk) { db, limit in
                try CampaignHistoryTable(db).prune(campaign: campaign, before: cutoff, limit: limit)
            }
        }
        return total
    }
}
