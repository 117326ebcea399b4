import Foundation
import GRDB
import Logging
import PartitionStore
import Shared

/// A publish with a migration map moves the instances in flight on earlier versions onto the new one (docs/journeys.md,
/// "Versions and edits"): when the partition follows the new configuration, and again whenever an instance is
/// touched (one restored after that). Each keeps the time it reached its node: a delay or a wait is re-anchored to it
/// (one already past its new length is due at once), and a node that takes no time runs at the next timer round.
struct JourneyMigration {
    let db: Database
    let rules: EngagementRules
    let now: Date

    private static let logger = Logger(label: "herald.journeys")

    /// Moves every instance in flight of an earlier version of each journey with a migration map; returns how many
    /// moved.
    func reconcile() throws -> Int {
        var moved = 0
        for journey in rules.config.journeys.values.sorted(by: { $0.key < $1.key }) where journey.migration != nil {
            for var instance in try JourneyInstancesTable(db).inFlight(journey: journey.key, notVersion: journey.version) {
                if try migrate(&instance, to: journey) { moved += 1 }
            }
        }
        return moved
    }

    /// One instance onto `journey`'s version; false when it cannot move (no map, or its node neither mapped nor in the
    /// new version: it finishes its own version, counted `refused` and logged).
    func migrate(_ instance: inout JourneyInstance, to journey: JourneyDefinition) throws -> Bool {
        guard journey.migration != nil, let node = instance.node, instance.version != journey.version else { return false }
        guard let target = journey.migrationTarget(from: node) else {
            JourneyMetrics.migration(journey, .refused)
            Self.logger.warning(
                "journey instance not migrated: its node is neither mapped nor in the new version",
                metadata: ["journey": "\(journey.key)", "node": "\(node)", "version": "\(instance.version)", "to": "\(journey.version)"])
            return false
        }
        let table = JourneyInstancesTable(db)
        let timers = TimersTable(db)
        try timers.delete(key: instance.profileKey, kind: .journey, ref: JourneySteps.timerRef(instance, node: node))
        try table.keep(journey, at: now)
        instance.version = journey.version
        JourneyMetrics.migration(journey, .moved)
        guard let step = journey.nodes[target]?.step else {
            // Mapped to `exit`.
            instance.node = nil
            instance.ended = "migrated_out \(node)"
            instance.since = now
            try table.move(instance)
            JourneyMetrics.ended(journeyKey: journey.key, .migratedOut)
            return true
        }
        // Re-anchored to when the instance reached its node: a shortened delay that has passed is due now.
        let due: Date
        switch step {
        case .delay(.duration(let seconds), _): due = instance.since.addingTimeInterval(seconds)
        case .delay(let delay, _): due = JourneySteps(db: db, rules: rules, now: now).due(delay, key: instance.profileKey)
        case .wait(_, let timeout, _): due = instance.since.addingTimeInterval(timeout)
        default: due = now
        }
        instance.node = target
        try table.move(instance)
        // An update node's write in flight goes on with the node of its name when it is applied (no timer: it would
        // make the write again).
        if case .update = step, target == node { return true }
        try timers.set(key: instance.profileKey, kind: .journey, ref: JourneySteps.timerRef(instance, node: target), due: min(max(due, .distantPast), .distantFuture))
        return true
    }
}
