import Foundation
import Logging
import Shared
import OrchestratorDomain
import PartitionStore

/// Who is where in a journey, in this instance's partitions (`JourneyEndpoints`, `herald_journey_waiting`).
extension OrchestratorPartitions {
    /// Counts the instances waiting at each node in the partitions running here (`JourneyWaitingGauge`).
    func countWaiting() async {
        guard let config = rules?.config, !config.journeys.isEmpty else { return }
        var counts: [(journey: String, node: String, count: Int)] = []
        for number in await owner.runningPartitions {
            do {
                guard let found = try await owner.run(on: number, { try await OrchestratorPartition($0).journeysWaiting() }) else { continue }
                counts += found
            } catch {
                logger.warning("journey instances not counted", metadata: ["partition": "\(number)", "error": "\(error)"])
            }
        }
        waitingGauge.record(counts, config: config)
    }

    /// The journey's counts per version and node in `partitions`, each running here; nil when one is not.
    func journeyCounts(journey: String, in partitions: [Int32]) async throws -> [JourneyPositions.Count]? {
        try await owner.run(onEach: partitions) { database in
            try await database.read { db in try JourneyPositions.counts(db, journey: journey) }
        }.map(JourneyPositions.sum)
    }

    /// The first `limit` instances at `node` after `after` in `partitions`, merged; nil when one is not running here.
    func journeyPage(journey: String, node: String, after: String, limit: Int, in partitions: [Int32]) async throws -> [JourneyPositions.Position]? {
        try await owner.run(onEach: partitions) { database in
            try await database.read { db in try JourneyPositions.page(db, journey: journey, node: node, after: after, limit: limit) }
        }.map { JourneyPositions.merge($0, limit: limit) }
    }
}
