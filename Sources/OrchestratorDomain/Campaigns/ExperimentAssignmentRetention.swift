import Foundation
import GRDB
import PartitionStore
import Shared

extension PartitionDatabase {
    /// Forgets the assignments and conversions of experiment versions no campaign runs any more (its split changed, its
    /// experiment, its conversions or the campaign removed) once they are older than the longest conversion window,
    /// `ExperimentAssignmentsTable.window` (docs/retention.md); the running versions keep theirs. `chunk` rows per
    /// transaction; returns how many went.
    package func pruneExperimentAssignments(rules: EngagementRules, now: Date, chunk: Int = 5_000) async throws -> Int {
        let cutoff = WireTime.format(now.addingTimeInterval(-ExperimentAssignmentsTable.window))
        let versions = try await read { db in try ExperimentAssignmentsTable(db).versions() }
        var pruned = 0
        for (campaign, version) in versions {
            guard Self.runningVersion(of: rules.config.campaigns[campaign]) != version else { continue }
            pruned += try await pruneInChunks(chunk: chunk) { db, limit in
                try ExperimentAssignmentsTable(db).prune(campaign: campaign, version: version, before: cutoff, limit: limit)
                    + CampaignConversionsTable(db).prune(campaign: campaign, version: version, before: cutoff, limit: limit)
            }
        }
        return pruned
    }

    /// The version a campaign assigns in now: its experiment's, `none` when it counts conversions without one.
    static func runningVersion(of campaign: CampaignDefinition?) -> String? {
        guard let campaign else { return nil }
        if let experiment = campaign.experiment { return ExperimentAssignment.version(experiment) }
        return campaign.conversions.isEmpty ? nil : CampaignConversions.noExperiment
    }
}
