import Foundation
import OrchestratorDomain
import PartitionStore

/// A campaign's experiment figures in this instance's partitions (`ExperimentEndpoints`).
extension OrchestratorPartitions {
    /// The campaign's figures in `partitions`, each running here (as work their revocation waits for); nil when one
    /// is not.
    func experimentFigures(campaign: String, conversions: Int, in partitions: [Int32]) async throws -> ExperimentFigures? {
        var total = ExperimentFigures(arms: [])
        for partition in partitions {
            guard let figures = try await owner.run(on: partition, { database in
                try await database.read { db in try ExperimentFigures.read(db, campaign: campaign, conversions: conversions) }
            }) else { return nil }
            total = total.adding(figures)
        }
        return total
    }
}
