import Foundation
import GRDB
import PartitionStore
import Metrics
import Shared
import Synchronization

/// Segment membership, kept exact at every write of a profile.
extension Engagement {
    /// Re-evaluates the segments of the profile that read one of `changes`; an entry fires the segment's entry
    /// campaigns (its occurrence named by `cause`). A profile that is gone leaves every segment.
    mutating func profileChanged(key: String, changes: Set<String>, cause: String) throws {
        let values = values(key)
        guard values.exists else {
            try leaveAll(key: key)
            return
        }
        let segments = rules.segments(project: ProfileKey.project(of: key), reading: changes)
        guard !segments.isEmpty else { return }
        let stored = try StoredMembership(db, key: key)
        for segment in segments {
            try evaluate(segment, values: values, cause: cause, fireCampaigns: true, stored: stored)
        }
    }

    /// A profile's stored segment state, read once for all the segments evaluated after a write.
    struct StoredMembership {
        var segments: Set<String> = []
        /// Segment key → due time of its time-flip timer.
        var timers: [String: String] = [:]

        init() {}

        init(_ db: Database, key: String) throws {
            segments = Set(
                try String.fetchAll(
                    db.cachedStatement(sql: "SELECT segment_key FROM segment_members WHERE profile_key = ?"), arguments: [key]))
            for row in try Row.fetchAll(
                db.cachedStatement(sql: "SELECT ref, due_at FROM timers WHERE profile_key = ? AND kind = 'segment'"),
                arguments: [key])
            {
                timers[row["ref"]] = row["due_at"]
            }
        }
    }

    /// Whether the profile is in `segment` now; stores membership and the next time-flip timer (writing only what
    /// changed); an entry or an exit fires the segment's entry or exit campaigns. Returns whether it entered.
    @discardableResult
    mutating func evaluate(
        _ segment: CompiledSegment, values: ProfileValues, cause: String, fireCampaigns: Bool, stored: StoredMembership
    ) throws -> Bool {
        let key = values.key
        Self.evaluations.add(1, ordering: .relaxed)
        Self.evaluationsMetric.increment()
        let read = { (path: SegmentPath) in values.read(path) }
        let member = segment.definition.condition.matches(at: now, read: read)
        let wasMember = stored.segments.contains(segment.key)
        let next = segment.definition.condition.nextChange(after: now, read: read).map(WireTime.format)
        if next != stored.timers[segment.key] {
            if let next {
                try setTimer(key: key, kind: "segment", ref: segment.key, due: next)
            } else {
                try db.executeCached(
                    sql: "DELETE FROM timers WHERE profile_key = ? AND kind = 'segment' AND ref = ?", arguments: [key, segment.key])
            }
        }
        guard member != wasMember else { return false }
        let direction = member ? "entry" : "exit"
        Counter(label: "herald_segment_transitions_total", dimensions: [("direction", direction)]).increment()
        if member {
            try db.executeCached(
                sql: "INSERT INTO segment_members (segment_key, profile_key, since) VALUES (?, ?, ?)",
                arguments: [segment.key, key, WireTime.format(now)])
        } else {
            try db.executeCached(
                sql: "DELETE FROM segment_members WHERE segment_key = ? AND profile_key = ?", arguments: [segment.key, key])
        }
        if fireCampaigns {
            for campaign in (member ? rules.entryCampaigns : rules.exitCampaigns)[segment.key] ?? [] {
                try trigger(
                    campaign, key: key,
                    TriggerContext(
                        type: "segment_\(direction)", occurrence: "\(direction) \(segment.definition.id) \(cause)", at: now))
            }
        }
        return member
    }

    private mutating func leaveAll(key: String) throws {
        let left = try String.fetchAll(
            db.cachedStatement(sql: "SELECT segment_key FROM segment_members WHERE profile_key = ?"), arguments: [key])
        if !left.isEmpty {
            Counter(label: "herald_segment_transitions_total", dimensions: [("direction", "exit")]).increment(by: left.count)
        }
        try db.executeCached(sql: "DELETE FROM segment_members WHERE profile_key = ?", arguments: [key])
        try db.executeCached(sql: "DELETE FROM timers WHERE profile_key = ?", arguments: [key])
    }
}
