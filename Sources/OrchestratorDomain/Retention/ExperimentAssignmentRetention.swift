import Foundation
import GRDB
import PartitionStore
import Shared

extension OrchestratorRetention {
    /// Forgets the assignments, conversions and send counts of experiment versions no campaign runs any more (its split changed, its
    /// experiment, its conversions or the campaign removed) once they are older than the longest conversion window,
    /// `ExperimentAssignmentsTable.window` (docs/retention.md); the running versions keep theirs. `chunk` rows per
    /// transaction; returns how many went.
    package static func pruneExperimentAssignments(
        _ database: PartitionDatabase, rules: EngagementRules, now: Date, chunk: Int = 5_000
    ) async throws -> Int {
        let cutoff = now.addingTimeInterval(-ExperimentAssignmentsTable.window)
        // Every version the partition holds rows of: assignments, or send counts alone (their assignments pruned).
        let versions = try await database.read { db in try ExperimentAssignmentsTable(db).heldVersions() }
        var pruned = 0
        for (campaign, version) in versions {
            guard !runningVersions(of: rules.config.campaigns[campaign], rules: rules).contains(version) else { continue }
            pruned += try await database.pruneInChunks(chunk: chunk) { db, limit in
                try ExperimentAssignmentsTable(db).prune(campaign: campaign, version: version, before: cutoff, limit: limit)
                    + CampaignConversionsTable(db).prune(campaign: campaign, version: version, before: cutoff, limit: limit)
            }
            pruned += try await database.write { db in
                try ExperimentSendsTable(db).prune(campaign: campaign, version: version, before: cutoff)
            }
        }
        return pruned
    }

    /// The versions a campaign assigns in now: its experiment's (`none` when it counts conversions without one), and
    /// those of the global holdout groups that hold it back.
    static func runningVersions(of campaign: CampaignDefinition?, rules: EngagementRules) -> Set<String> {
        guard let campaign else { return [] }
        var versions: Set<String> = []
        if let experiment = campaign.experiment {
            versions.insert(ExperimentAssignment.version(experiment))
        } else if !campaign.conversions.isEmpty {
            versions.insert(CampaignConversions.noExperiment)
        }
        for group in rules.holdouts[campaign.project] ?? [] where !group.exempts(campaign) {
            versions.insert(group.version)
        }
        return versions
    }
}
