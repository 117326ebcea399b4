import Foundation
import GRDB
import PartitionStore
import Metrics
import Shared
import Synchronization

/// Segments and campaigns inside a partition's transaction: membership kept exact at every write, time conditions on
/// durable timers, campaign decisions turned into send requests in the outbox (docs/campaigns.md).
struct Engagement {
    let db: Database
    let rules: EngagementRules
    let now: Date
    var outputs: [PendingOutput] = []

    init(db: Database, rules: EngagementRules, now: Date? = nil) {
        self.db = db
        self.rules = rules
        self.now = now ?? rules.clock()
    }

    /// Segment evaluations since the process started (`herald_segment_evaluations_total`; read by the benchmark).
    package static let evaluations = Atomic<Int>(0)
    static let evaluationsMetric = Counter(label: "herald_segment_evaluations_total")

    /// The profile's values, read on first use (its project's default time zone included).
    func values(_ key: String) -> ProfileValues {
        ProfileValues(db: db, key: key, defaultTimeZone: rules.config.defaultTimeZone(project: ProfileKey.project(of: key)))
    }

    /// Sets (or moves) a durable timer of the profile: segment time flips, campaign delays, schedules.
    func setTimer(key: String, kind: String, ref: String, due: Date, payload: JSONValue? = nil) throws {
        try setTimer(key: key, kind: kind, ref: ref, due: WireTime.format(due), payload: payload)
    }

    func setTimer(key: String, kind: String, ref: String, due: String, payload: JSONValue? = nil) throws {
        try db.executeCached(
            sql: """
                INSERT INTO timers (profile_key, kind, ref, due_at, payload) VALUES (?, ?, ?, ?, ?)
                ON CONFLICT (profile_key, kind, ref) DO UPDATE SET due_at = excluded.due_at, payload = excluded.payload
                """,
            arguments: [key, kind, ref, due, payload.map { String(decoding: $0.serialized, as: UTF8.self) }])
    }
}
