import Metrics
import Shared

/// `herald_journey_waiting{journey,node}`: the instances waiting at each node of each journey now (delays, waits, and
/// updates while their write comes back), in this instance's running partitions, whatever their version. The labels
/// are the configuration's journeys and nodes (an earlier version's node that the current one lacks counts under
/// `node="(earlier version)"`), so that their number is bounded by it; a series no longer counted is set to 0.
final class JourneyWaitingGauge: @unchecked Sendable {
    /// The label pairs recorded last time (only `OrchestratorPartitions`, an actor, calls `record`).
    private var recorded: Set<[String]> = []

    static let earlierVersion = "(earlier version)"

    func record(_ counts: [(journey: String, node: String, count: Int)], config: HeraldConfiguration) {
        var totals: [[String]: Int] = [:]
        for journey in config.journeys.values {
            for node in journey.nodes.values where node.step.holds { totals[[journey.key, node.name]] = 0 }
        }
        for (journey, node, count) in counts {
            guard let definition = config.journeys[journey] else { continue }
            let name = definition.nodes[node] != nil ? node : Self.earlierVersion
            totals[[journey, name], default: 0] += count
        }
        for (labels, count) in totals {
            Gauge(label: "herald_journey_waiting", dimensions: [("journey", labels[0]), ("node", labels[1])]).record(count)
        }
        for labels in recorded.subtracting(totals.keys) {
            Gauge(label: "herald_journey_waiting", dimensions: [("journey", labels[0]), ("node", labels[1])]).record(0)
        }
        recorded = Set(totals.keys)
    }
}
