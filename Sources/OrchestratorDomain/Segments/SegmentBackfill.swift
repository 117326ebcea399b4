import Foundation
import GRDB
import Logging
import PartitionStore
import Shared

/// Segments the partition has not evaluated for its profiles yet: a new segment, or one whose condition changed, is
/// forgotten and evaluated again for every profile of its project, in chunks (`OrchestratorPartitions` runs them
/// between batches), without firing entry campaigns (a new segment's members did not just *enter* it). Where each
/// stands is a row of `segment_backfills`, written with its chunk, so a restart goes on from there.
///
/// Until a segment's backfill is done, what reads it waits or asks for itself (docs/campaigns.md, "Backfill"):
/// a write's profile not reached yet is evaluated first (`evaluateAhead`), so that the write's entry or exit is one;
/// an audience check evaluates its profile (`CampaignDecider`); a schedule waits (`isComplete`).
struct SegmentBackfill {
    let db: Database
    let rules: EngagementRules
    let now: Date

    /// Forgets the membership of segments that are gone or whose condition changed; returns the keys of the segments
    /// to backfill (new or changed). Segments evaluated by writes before their backfill finished keep that membership;
    /// the backfill redoes them.
    func reconcile() throws -> [String] {
        let states = SegmentStateTable(db)
        let backfills = SegmentBackfillsTable(db)
        let stored = try states.all()
        let current = Dictionary(uniqueKeysWithValues: rules.config.segments.values.map { ($0.key, $0.conditionText) })
        for (key, condition) in stored where current[key] != condition {
            try SegmentMembersTable(db).deleteSegment(key)
            try TimersTable(db).deleteSegmentTimers(segment: key)
            try states.delete(key)
        }
        // A backfill under way of a segment that is gone: what it stored goes with it.
        for key in try backfills.all() where current[key] == nil {
            try SegmentMembersTable(db).deleteSegment(key)
            try TimersTable(db).deleteSegmentTimers(segment: key)
            try backfills.delete(key)
        }
        let pending = current.filter { stored[$0.key] != $0.value }.keys.sorted()
        for key in pending {
            // A backfill of another condition was under way: what it stored is forgotten with it.
            if let running = try backfills.cursor(key), running.condition != current[key] {
                try SegmentMembersTable(db).deleteSegment(key)
                try TimersTable(db).deleteSegmentTimers(segment: key)
            }
            try backfills.start(key, condition: current[key]!)
        }
        return pending
    }

    /// Whether every profile of the partition has been evaluated for the segment's current condition, so that its
    /// members can be listed (a schedule's audience).
    func isComplete(_ segment: CompiledSegment) throws -> Bool {
        try SegmentStateTable(db).condition(of: segment.key) == segment.definition.conditionText
    }

    /// Evaluates the profile `key`, before a write of it is applied, for each segment of its project whose backfill
    /// has not reached it: its membership is then what it was before the write, so the write's entries and exits are
    /// ones (a profile not evaluated yet would otherwise *enter* a segment it was always in, or its real entry be
    /// taken for the backfill's). Nothing to do, one lookup, when no backfill runs.
    func evaluateAhead(key: String) throws {
        let waiting = try SegmentBackfillsTable(db).notReached(key: key, project: ProfileKey.project(of: key))
        guard !waiting.isEmpty else { return }
        let values = ProfileValues(db: db, key: key, rules: rules)
        guard values.exists else { return }
        let stored = try SegmentEvaluator.StoredMembership(db, key: key)
        let evaluator = SegmentEvaluator(db: db, rules: rules, now: now)
        for (segmentKey, condition) in waiting {
            guard let segment = rules.segment(segmentKey), segment.definition.conditionText == condition else { continue }
            _ = try evaluator.evaluate(segment, values: values, cause: "backfill", stored: stored)
        }
    }

    /// How long a schedule waiting for its audience's backfill waits before it looks again.
    static let retry: TimeInterval = 1

    /// Whether a campaign's audience is still being backfilled here, so that its members cannot be listed yet.
    func isBackfilling(audience: String, of campaign: CampaignDefinition) throws -> Bool {
        guard let segment = rules.segment("\(campaign.project)/\(audience)"), try !isComplete(segment) else { return false }
        Logger(label: "herald.campaigns").debug(
            "schedule waits for its audience's backfill", metadata: ["campaign": "\(campaign.key)", "segment": "\(segment.key)"])
        return true
    }

    /// Whether the profile is in the segment `segmentKey` (`<project>/<id>`); false for a segment not configured.
    func isMember(_ key: String, ofSegment segmentKey: String) throws -> Bool {
        guard let segment = rules.segment(segmentKey) else { return false }
        return try isMember(key, of: segment)
    }

    /// Whether the profile is in the segment, evaluating it now when the segment's backfill is not finished (as the
    /// backfill will: membership and timer stored, no entry or exit).
    func isMember(_ key: String, of segment: CompiledSegment) throws -> Bool {
        if try !isComplete(segment) {
            let values = ProfileValues(db: db, key: key, rules: rules)
            if values.exists {
                _ = try SegmentEvaluator(db: db, rules: rules, now: now)
                    .evaluate(segment, values: values, cause: "backfill", stored: try SegmentEvaluator.StoredMembership(db, key: key))
            }
        }
        return try SegmentMembersTable(db).contains(segment: segment.key, key: key)
    }

    /// Evaluates `segmentKey` for up to `limit` profiles of its project after where its backfill stands (key order),
    /// and moves it on. Returns whether the backfill is finished and how many were evaluated. When finished, the
    /// segment's condition is recorded as backfilled.
    func run(segmentKey: String, limit: Int) throws -> (done: Bool, evaluated: Int) {
        guard let segment = rules.segment(segmentKey) else { return (true, 0) }
        let condition = segment.definition.conditionText
        guard try SegmentStateTable(db).condition(of: segmentKey) != condition else { return (true, 0) }
        let backfills = SegmentBackfillsTable(db)
        let cursor = try backfills.cursor(segmentKey)
        // Not started by this configuration's reconcile yet (or started for another condition): reconcile first.
        guard let cursor, cursor.condition == condition else { return (false, 0) }
        let after = cursor.after
        let project = segment.definition.project
        let evaluator = SegmentEvaluator(db: db, rules: rules, now: now)
        // The chunk's rows are read in a few range scans (profiles, their attributes, this segment's memberships and
        // timers), not four lookups per profile: a backfill is a scan.
        let profiles = try ProfilesTable(db).page(project: project, after: after, limit: limit)
        let keys = profiles.map(\.key)
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
            try SegmentStateTable(db).backfilled(segmentKey, condition: condition, at: now)
            try backfills.delete(segmentKey)
            return (true, keys.count)
        }
        if let last = keys.last { try backfills.advance(segmentKey, after: last) }
        return (false, keys.count)
    }
}
