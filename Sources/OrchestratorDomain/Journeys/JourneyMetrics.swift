import Foundation
import Metrics
import Shared

/// `herald_journey_entries_total{journey,outcome}`, `herald_journey_nodes_total{journey,node}` (arrivals at a node),
/// `herald_journey_timeouts_total{journey,node}`, `herald_journey_ends_total{journey,reason}` and
/// `herald_journey_migrations_total{journey,outcome}`: labels bounded by the configuration.
enum JourneyMetrics {
    enum EntryOutcome: String {
        case entered
        case notInAudience = "not_in_audience"
        case reentryRefused = "reentry_refused"
    }

    /// How an instance ended: at an exit node, by an exit rule, its journey removed from the configuration, or its
    /// node or version not found (`lost`, logged).
    enum Ending: String {
        case completed
        case exitRule = "exit_rule"
        case removed
        case lost
        /// A migration mapped its node to `exit`.
        case migratedOut = "migrated_out"
    }

    enum MigrationOutcome: String {
        case moved
        /// Its node neither mapped nor in the new version: it finishes its own.
        case refused
    }

    static func migration(_ journey: JourneyDefinition, _ outcome: MigrationOutcome) {
        Counter(label: "herald_journey_migrations_total", dimensions: [("journey", journey.key), ("outcome", outcome.rawValue)]).increment()
    }

    static func entry(_ journey: JourneyDefinition, _ outcome: EntryOutcome) {
        Counter(label: "herald_journey_entries_total", dimensions: [("journey", journey.key), ("outcome", outcome.rawValue)]).increment()
    }

    static func reached(_ journey: JourneyDefinition, node: String) {
        Counter(label: "herald_journey_nodes_total", dimensions: [("journey", journey.key), ("node", node)]).increment()
    }

    static func timedOut(_ journey: JourneyDefinition, node: String) {
        Counter(label: "herald_journey_timeouts_total", dimensions: [("journey", journey.key), ("node", node)]).increment()
    }

    static func ended(journeyKey: String, _ reason: Ending) {
        Counter(label: "herald_journey_ends_total", dimensions: [("journey", journeyKey), ("reason", reason.rawValue)]).increment()
    }
}
