import Foundation
import PartitionStore
import Shared

/// What the orchestrator forgets in a partition, table by table (docs/retention.md): one list, each entry its table,
/// its rule and the figure of the retention log it counts under. The orchestrator's retention round runs the list in
/// every partition it owns, through the partition's door; the rules themselves are this type's `prune…` functions.
package enum OrchestratorRetention {
    /// The figures of the `retention applied` log line.
    package enum Figure: String, Sendable, CaseIterable {
        /// Record ids kept for the dedupe window.
        case ids
        /// Pushes too old to be opened, cards long expired.
        case receipts
        /// Campaign decisions, in-app impressions, experiment rows and ended journey instances no rule reads any more.
        case decisions
        /// Sends older than every frequency cap.
        case frequencyLog = "frequency_log"
    }

    /// What a rule reads: the configuration (nil before it is known: rules that need it keep everything), now, and the
    /// dedupe window (`HERALD_DEDUPE_RETENTION`).
    package struct Context: Sendable {
        package var rules: EngagementRules?
        package var now: Date
        package var dedupeWindow: TimeInterval

        package init(rules: EngagementRules?, now: Date, dedupeWindow: TimeInterval) {
            self.rules = rules
            self.now = now
            self.dedupeWindow = dedupeWindow
        }
    }

    /// A table the round prunes, with its rule.
    package struct Prunable: Sendable {
        package var table: String
        package var figure: Figure
        /// Prunes the table in one partition; returns how many rows went.
        package var prune: @Sendable (PartitionDatabase, Context) async throws -> Int
    }

    /// Every table the orchestrator prunes, in the order the round runs them. A rule that needs the configuration
    /// prunes nothing before it is known: a `once` campaign's decisions are kept for good.
    package static let tables: [Prunable] = [
        Prunable(table: "applied_records", figure: .ids) { database, context in
            try await database.pruneApplied(before: context.now.addingTimeInterval(-context.dedupeWindow))
        },
        Prunable(table: "push_receipts", figure: .receipts) { database, context in
            try await prunePushReceipts(database, now: context.now)
        },
        Prunable(table: "content_cards", figure: .receipts) { database, context in
            try await pruneContentCards(database, now: context.now)
        },
        Prunable(table: "campaign_history", figure: .decisions) { database, context in
            guard let rules = context.rules else { return 0 }
            return try await pruneCampaignHistory(database, rules: rules, now: context.now, dedupeWindow: context.dedupeWindow)
        },
        Prunable(table: "in_app_impressions", figure: .decisions) { database, context in
            guard let rules = context.rules else { return 0 }
            return try await pruneInAppImpressions(database, rules: rules, now: context.now, dedupeWindow: context.dedupeWindow)
        },
        Prunable(table: "experiment_assignments, campaign_conversions, experiment_sends", figure: .decisions) { database, context in
            guard let rules = context.rules else { return 0 }
            return try await pruneExperimentAssignments(database, rules: rules, now: context.now)
        },
        Prunable(table: "journey_instances", figure: .decisions) { database, context in
            guard let rules = context.rules else { return 0 }
            return try await pruneJourneyInstances(database, rules: rules, now: context.now, dedupeWindow: context.dedupeWindow)
        },
        Prunable(table: "frequency_log", figure: .frequencyLog) { database, context in
            guard let rules = context.rules else { return 0 }
            return try await pruneFrequencyLog(database, rules: rules, now: context.now)
        },
    ]

    /// Runs every rule in one partition; returns the rows that went, by figure.
    package static func apply(_ database: PartitionDatabase, _ context: Context) async throws -> [Figure: Int] {
        var pruned: [Figure: Int] = [:]
        for table in tables { pruned[table.figure, default: 0] += try await table.prune(database, context) }
        return pruned
    }
}
