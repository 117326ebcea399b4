import Foundation
import GRDB
import PartitionStore
import Shared

/// What the orchestrator's partition manager drives outside batches: timers, configuration changes and backfills.
extension PartitionDatabase {
    /// Runs due timers in one transaction (at most `limit`); returns how many ran and the outbox records written.
    package func runTimers(rules: EngagementRules, limit: Int = 1000) async throws -> (ran: Int, outbox: [OutboxRecord]) {
        // A read first: most ticks find nothing due, and need not wait for the writer (a batch being applied).
        let due = WireTime.format(rules.clock())
        let anything = try await read { db in
            try Bool.fetchOne(db.cachedStatement(sql: "SELECT 1 FROM timers WHERE due_at <= ? LIMIT 1"), arguments: [due]) ?? false
        }
        guard anything else { return (0, []) }
        return try await writeWithOutbox { db in
            var engagement = Engagement(db: db, rules: rules)
            let count = try engagement.runDueTimers(limit: limit)
            return (count, engagement.outputs)
        }
    }

    /// Follows a new configuration: forgets what changed, sets schedule timers; returns the segments to backfill.
    package func reconcile(rules: EngagementRules) async throws -> [String] {
        try await write { db in
            var engagement = Engagement(db: db, rules: rules)
            return try engagement.reconcile()
        }
    }

    /// One chunk of a segment's backfill (its own transaction, so writes go on between chunks).
    package func backfill(rules: EngagementRules, segment: String, after: String?, limit: Int = 2000) async throws
        -> (last: String?, evaluated: Int)
    {
        try await write { db in
            var engagement = Engagement(db: db, rules: rules)
            return try engagement.backfill(segmentKey: segment, after: after, limit: limit)
        }
    }

    /// The segments a profile of this partition is in (for views and tests).
    package func segments(of key: String) async throws -> [String] {
        try await read { db in
            try String.fetchAll(
                db, sql: "SELECT segment_key FROM segment_members WHERE profile_key = ? ORDER BY segment_key", arguments: [key])
        }
    }
}
