import Foundation
import OrchestratorDomain
import PartitionStore

/// A campaign's experiment figures in this instance's partitions (`ExperimentEndpoints`).
extension OrchestratorPartitions {
    /// The campaign's figures in `partitions`, each running here (as work their revocation waits for); nil when one
    /// is not.
    func experimentFigures(campaign: String, conversions: Int, in partitions: [Int32]) async throws -> ExperimentFigures? {
        try await owner.run(onEach: partitions) { database in
            try await database.read { db in try ExperimentFigures.read(db, campaign: campaign, conversions: conversions) }
        }?.reduce(ExperimentFigures(arms: [])) { $0.adding($1) }
    }
}
