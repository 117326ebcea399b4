import Foundation
import GRDB
import PartitionStore
import Shared

extension PartitionDatabase {
    /// Forgets the assignments of experiment versions no campaign runs any more (its weights changed, its experiment
    /// or the campaign removed) once they are older than the longest conversion window, `ExperimentAssignmentsTable`'s
    /// `window` (docs/retention.md); the running versions keep theirs. `chunk` rows per transaction; returns how many
    /// went.
    package func pruneExperimentAssignments(rules: EngagementRules, now: Date, chunk: Int = 5_000) async throws -> Int {
        let cutoff = WireTime.format(now.addingTimeInterval(-ExperimentAssignmentsTable.window))
        let versions = try await read { db in try ExperimentAssignmentsTable(db).versions() }
        var pruned = 0
        for (campaign, version) in versions {
            let running = rules.config.campaigns[campaign]?.experiment.map(ExperimentAssignment.version)
            guard running != version else { continue }
            pruned += try await pruneInChunks(chunk: chunk) { db, limit in
                try ExperimentAssignmentsTable(db).prune(campaign: campaign, version: version, before: cutoff, limit: limit)
            }
        }
        return pruned
    }
}
