import Foundation
import GRDB
import Metrics
import PartitionStore
import Shared
import Synchronization

/// A profile entered or left a segment.
struct SegmentTransition {
    let key: String
    let segment: CompiledSegment
    let entered: Bool
    /// What made it happen (the write's id, a timer's time, a delivery): names the entry or exit campaigns' occurrence.
    let cause: String
}

/// Segment membership, kept exact at every write of a profile (docs/segments.md): the segments that read what changed
/// are evaluated again, membership and the next time flip (a durable timer) stored, and the entries and exits returned
/// for the campaigns they trigger (`CampaignDecider.segmentsChanged`).
struct SegmentEvaluator {
    let db: Database
    let rules: EngagementRules
    let now: Date

    /// Segment evaluations since the process started (`herald_segment_evaluations_total`; read by the benchmark).
    package static let evaluations = Atomic<Int>(0)
    static let evaluationsMetric = Counter(label: "herald_segment_evaluations_total")

    /// Evaluates again the segments of the profile that read one of `changes`. A profile that is gone leaves every
    /// segment (without transitions: its campaigns have no one to send to).
    func profileChanged(key: String, changes: Set<ChangeKey>, cause: String) throws -> [SegmentTransition] {
        let values = ProfileValues(db: db, key: key, rules: rules)
        guard values.exists else {
            try leaveAll(key: key)
            return []
        }
        let segments = rules.segments(project: ProfileKey.project(of: key), reading: changes)
        guard !segments.isEmpty else { return [] }
        let stored = try StoredMembership(db, key: key)
        return try segments.compactMap { try evaluate($0, values: values, cause: cause, stored: stored) }
    }

    /// Evaluates one segment for the profile (its time flip came); nil when the profile is gone or did not move.
    func timeFlip(key: String, segment: CompiledSegment, cause: String) throws -> SegmentTransition? {
        let values = ProfileValues(db: db, key: key, rules: rules)
        guard values.exists else { return nil }
        // Read after the timer's row was deleted: a next flip is written again.
        return try evaluate(segment, values: values, cause: cause, stored: try StoredMembership(db, key: key))
    }

    /// A profile's stored segment state, read once for all the segments evaluated after a write.
    struct StoredMembership {
        var segments: Set<String> = []
        /// Segment key → due time of its time-flip timer.
        var timers: [String: Date] = [:]

        init() {}

        init(_ db: Database, key: String) throws {
            segments = Set(try SegmentMembersTable(db).segments(of: key))
            timers = try TimersTable(db).segmentTimers(key: key)
        }
    }

    /// Whether the profile is in `segment` now; stores membership and the next time-flip timer (writing only what
    /// changed). Returns the entry or exit, if it moved.
    func evaluate(
        _ segment: CompiledSegment, values: ProfileValues, cause: String, stored: StoredMembership
    ) throws -> SegmentTransition? {
        let key = values.key
        Self.evaluations.add(1, ordering: .relaxed)
        Self.evaluationsMetric.increment()
        let read = { (path: SegmentPath) in values.read(path) }
        let member = segment.definition.condition.matches(at: now, read: read)
        let wasMember = stored.segments.contains(segment.key)
        let next = segment.definition.condition.nextChange(after: now, read: read)
        if !WireTime.same(next, stored.timers[segment.key]) {
            let timers = TimersTable(db)
            if let next {
                try timers.set(key: key, kind: .segment, ref: segment.key, due: next)
            } else {
                try timers.delete(key: key, kind: .segment, ref: segment.key)
            }
        }
        guard member != wasMember else { return nil }
        Counter(label: "herald_segment_transitions_total", dimensions: [("direction", member ? "entry" : "exit")]).increment()
        let members = SegmentMembersTable(db)
        if member {
            try members.insert(segment: segment.key, key: key, since: now)
        } else {
            try members.delete(segment: segment.key, key: key)
        }
        return SegmentTransition(key: key, segment: segment, entered: member, cause: cause)
    }

    private func leaveAll(key: String) throws {
        let members = SegmentMembersTable(db)
        let left = try members.segments(of: key)
        if !left.isEmpty {
            Counter(label: "herald_segment_transitions_total", dimensions: [("direction", "exit")]).increment(by: left.count)
        }
        try members.deleteAll(key: key)
        try TimersTable(db).deleteAll(key: key)
    }
}
