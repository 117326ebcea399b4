import Foundation
import GRDB
import PartitionStore
import Shared

/// The orchestrator's domain work on one partition's database, other than a batch's (`OrchestratorApplier`): timers,
/// the catch-up with a new configuration, segment backfills, deferred records, and reads. The partition layer's
/// `PartitionDatabase` knows transactions, offsets and the outbox; what they do for the orchestrator lives here (and in
/// `OrchestratorRetention`), called on the partition's owner through its door (`PartitionOwner.run(on:)`).
package struct OrchestratorPartition: Sendable {
    package let database: PartitionDatabase

    package init(_ database: PartitionDatabase) { self.database = database }

    /// Opens an orchestrator partition's database.
    package static func open(directory: String, partition: Int32) throws -> PartitionDatabase {
        try PartitionDatabase.open(directory: directory, partition: partition, migrator: OrchestratorSchema.migrator)
    }

    /// Runs due timers in one transaction (at most `limit`); returns how many ran and the outbox records written.
    /// With `hints` (`watchTimers`), the caller asked them first (`DueHints.isDue` with `timersDue`): the run
    /// reads nothing before its transaction, and sets them to the earliest timer left.
    package func runTimers(
        rules: EngagementRules, limit: Int = 1000, hints: DueHints? = nil
    ) async throws -> (ran: Int, outbox: [OutboxRecord]) {
        if hints == nil {
            // A read first: most ticks find nothing due, and need not wait for the writer (a batch being applied).
            let due = rules.clock()
            guard try await database.read({ db in try TimersTable(db).anyDue(at: due) }) else { return (0, []) }
        }
        return try await database.writeWithOutbox { db in
            var runner = TimerRunner(db: db, rules: rules, now: rules.clock())
            let count = try runner.runDue(limit: limit)
            // In the run's transaction: a timer another transaction sets lowers the hint after this.
            try hints?.reset(Self.timersDue, to: TimersTable(db).nextDue())
            return (count, runner.decider.outputs)
        }
    }

    /// The timers' kind in a partition's `DueHints`.
    package static let timersDue = "timers"

    /// Every timer a transaction of `database` sets or moves lowers `hints` from here on (`DueHints.watch`).
    package static func watchTimers(_ hints: DueHints, in database: PartitionDatabase) async throws {
        try await hints.watch(database, function: "herald_due", triggers: TimersTable.dueTriggers)
    }

    /// Follows a new configuration: forgets segments that changed, sets schedule timers, moves journey instances a
    /// migration map moves; returns the segments to backfill.
    package func reconcile(rules: EngagementRules) async throws -> [String] {
        try await database.write { db in
            let now = rules.clock()
            let pending = try SegmentBackfill(db: db, rules: rules, now: now).reconcile()
            try ScheduledRuns(db: db, rules: rules, now: now).reconcile()
            _ = try JourneyMigration(db: db, rules: rules, now: now).reconcile()
            return pending
        }
    }

    /// One chunk of a segment's backfill, from where it stands (its own transaction, so writes go on between chunks);
    /// returns whether it is finished.
    package func backfill(rules: EngagementRules, segment: String, limit: Int = 2000) async throws -> (done: Bool, evaluated: Int) {
        try await database.write { db in
            try SegmentBackfill(db: db, rules: rules, now: rules.clock()).run(segmentKey: segment, limit: limit)
        }
    }

    /// Applies the records an earlier version kept in `deferred_records` (ops it did not implement yet), in their
    /// order, in one transaction with their outbox records; returns the outbox records for the caller to produce.
    package func applyDeferred(
        apply: @escaping @Sendable (Database, KafkaRecord) throws -> [PendingOutput]
    ) async throws -> [OutboxRecord] {
        let partition = database.partition
        return try await database.writeWithOutbox { db in
            let table = DeferredRecordsTable(db)
            var outputs: [PendingOutput] = []
            for record in try table.all(partition: partition) { outputs += try apply(db, record) }
            try table.deleteAll()
            return ((), outputs)
        }.1
    }

    /// The sends quiet hours hold in this partition, and when the first goes.
    package func heldSends() async throws -> (count: Int, next: Date?) {
        try await database.read { db in try TimersTable(db).held() }
    }

    /// How many journey instances wait at each node in this partition.
    package func journeysWaiting() async throws -> [(journey: String, node: String, count: Int)] {
        try await database.read { db in try JourneyInstancesTable(db).waitingByNode() }
    }

    /// The segments a profile of this partition is in (for views and tests).
    package func segments(of key: String) async throws -> [String] {
        try await database.read { db in try SegmentMembersTable(db).segmentsInOrder(of: key) }
    }
}
