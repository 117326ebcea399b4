import Foundation
import GRDB
import PartitionStore
import Shared

/// Segments the partition has not evaluated for its profiles yet: a new segment, or one whose condition changed, is
/// forgotten and evaluated again for every profile of its project, in chunks (`OrchestratorPartitions` runs them
/// between batches), without firing entry campaigns (a new segment's members did not just *enter* it).
struct SegmentBackfill {
    let db: Database
    let rules: EngagementRules
    let now: Date

    /// Forgets the membership of segments that are gone or whose condition changed; returns the keys of the segments
    /// to backfill (new or changed). Segments evaluated by writes before their backfill finished keep that membership;
    /// the backfill redoes them.
    func reconcile() throws -> [String] {
        let states = SegmentStateTable(db)
        let stored = try states.all()
        let current = Dictionary(uniqueKeysWithValues: rules.config.segments.values.map { ($0.key, $0.conditionText) })
        for (key, condition) in stored where current[key] != condition {
            try SegmentMembersTable(db).deleteSegment(key)
            try TimersTable(db).deleteSegmentTimers(segment: key)
            try states.delete(key)
        }
        return current.filter { stored[$0.key] != $0.value }.keys.sorted()
    }

    /// Evaluates `segmentKey` for up to `limit` profiles of its project after `after` (key order). Returns the last key
    /// done (nil: finished) and how many were evaluated. When finished, the segment's condition is recorded as
    /// backfilled.
    func run(segmentKey: String, after: String?, limit: Int) throws -> (last: String?, evaluated: Int) {
        guard let segment = rules.segment(segmentKey) else { return (nil, 0) }
        let project = segment.definition.project
        let evaluator = SegmentEvaluator(db: db, rules: rules, now: now)
        // The chunk's rows are read in a few range scans (profiles, their attributes, this segment's memberships and
        // timers), not four lookups per profile: a backfill is a scan.
        let profiles = try ProfilesTable(db).page(project: project, after: after, limit: limit)
        let keys = profiles.map { $0["profile_key"] as String }
        if let first = keys.first, let last = keys.last {
            let members = try SegmentMembersTable(db).members(segment: segmentKey, from: first, through: last)
            let timers = try TimersTable(db).segmentTimers(segment: segmentKey, from: first, through: last)
            let readsAttributes = segment.readsCustomAttributes
            let attributes = readsAttributes ? try ProfileAttributesTable(db).all(from: first, through: last) : [:]
            for (key, profile) in zip(keys, profiles) {
                var stored = SegmentEvaluator.StoredMembership()
                if members.contains(key) { stored.segments.insert(segmentKey) }
                stored.timers[segmentKey] = timers[key]
                _ = try evaluator.evaluate(
                    segment,
                    values: ProfileValues(
                        db: db, key: key, defaultTimeZone: rules.config.defaultTimeZone(project: project), profile: profile,
                        attributes: readsAttributes ? attributes[key] ?? [:] : nil),
                    cause: "backfill", stored: stored)
            }
        }
        if keys.count < limit {
            try SegmentStateTable(db).backfilled(segmentKey, condition: segment.definition.conditionText, at: WireTime.format(now))
            return (nil, keys.count)
        }
        return (keys.last, keys.count)
    }
}
