import Foundation
import GRDB
import Metrics
import PartitionStore
import Shared

/// Applies the records of the orchestrator's topics (`herald.ingest`, `herald.deliveries`) to a partition's database,
/// inside the batch's transaction, and returns what to produce after the commit (the outbox). A write goes through
/// the stages in order:
///
/// 1. **route** (`WriteRouter`): here, or forwarded to the profile holding its installation or alias;
/// 2. **apply the op** (`OpApplier`), once: the profile's rows change, and what changed is recorded (`WriteEffects`);
///    each profile whose reachability changed gets its contact snapshot;
/// 3. **evaluate segments** (`SegmentEvaluator`) of the profiles that changed: entries and exits;
/// 4. **decide campaigns** (`CampaignDecider`): segment entries and exits, events, API triggers, journeys' updates
///    applied;
/// 5. **emit outputs**: identity records, contact snapshots, send requests, dead letters, in that order.
package enum OrchestratorApplier {
    /// A write forwarded between a home and profiles more often than this is dead-lettered: the links kept moving.
    static let maxHops = 8

    /// Applies a record without segments or campaigns.
    package static func apply(_ db: Database, record: KafkaRecord) throws -> [PendingOutput] {
        try apply(db, record: record, rules: .none)
    }

    package static func apply(_ db: Database, record: KafkaRecord, rules: EngagementRules) throws -> [PendingOutput] {
        switch HeraldTopic(rawValue: record.topic) {
        case .ingest: return try applyWrite(db, record: record, rules: rules)
        case .deliveries: return try applyReport(db, record: record, rules: rules)
        default: return [deadLetter(record, reason: "the orchestrator does not read \(record.topic)")]
        }
    }

    /// A `herald.ingest` write, through the five stages.
    static func applyWrite(_ db: Database, record: KafkaRecord, rules: EngagementRules) throws -> [PendingOutput] {
        let write: Write
        switch Write.read(record) {
        case .success(let read): write = read
        case .failure(let failure): return [deadLetter(record, reason: failure.reason)]
        }
        let now = rules.clock()
        // 1. Route.
        var effects = WriteEffects(write: write)
        switch try WriteRouter(db: db, write: write).route() {
        case .forward(let customID):
            return [forward(write, to: customID)]
        case .refuse(let reason):
            Counter(label: "herald_unsigned_writes_refused_total", dimensions: [("op", write.op.rawValue)]).increment()
            return [deadLetter(record, reason: reason)]
        case .apply(let plan):
            // 2. Apply the op, once (a replayed id is a no-op).
            guard try write.firstTime(db) else { return [] }
            // A segment being backfilled that has not reached the profile learns its membership before the write.
            if rules.isActive { try SegmentBackfill(db: db, rules: rules, now: now).evaluateAhead(key: write.profileKey) }
            try OpApplier(db: db, write: write, config: rules.config).apply(plan, &effects)
        }
        let outputs = try effects.outputsWithContacts(db)
        guard rules.isActive else { return outputs }
        // 3. Segments of the profiles that changed (first: an audience is up to date for the campaigns), and
        // 4. the campaigns their entries and exits, the events and the API triggers start.
        let segments = SegmentEvaluator(db: db, rules: rules, now: now)
        var campaigns = CampaignDecider(db: db, rules: rules, now: now)
        for (key, changes) in effects.changes {
            try campaigns.segmentsChanged(try segments.profileChanged(key: key, changes: changes, cause: write.id))
        }
        let conversions = CampaignConversions(db: db, rules: rules)
        for (key, trigger) in effects.events {
            try conversions.eventHappened(key: key, trigger)
            try campaigns.eventHappened(key: key, trigger)
        }
        for (key, kind, trigger) in effects.appTriggers { try campaigns.appTriggered(key: key, kind, trigger) }
        for (key, target, trigger) in effects.apiTriggers {
            try campaigns.apiTriggered(key: key, target, trigger, record: record)
        }
        for (key, update) in effects.journeyUpdates {
            try JourneySteps(db: db, rules: rules, now: now).updated(key: key, update, &campaigns)
        }
        // 5. Outputs.
        return outputs + campaigns.outputs
    }

    /// A `herald.deliveries` report: the profile's reachability and frequency log (`DeliveryFeedback`), its contact
    /// snapshot if reachability changed, and its segments that read reachability.
    static func applyReport(_ db: Database, record: KafkaRecord, rules: EngagementRules) throws -> [PendingOutput] {
        guard let bytes = record.value else { return [deadLetter(record, reason: "a null value on herald.deliveries")] }
        let report: DeliveryReport
        do {
            report = try Wire.decode(DeliveryReport.self, from: bytes)
        } catch {
            return [deadLetter(record, reason: error.description)]
        }
        // Engagement (opens, clicks, views, dismissals) was applied where it was reported; it counts only for its
        // experiment arm.
        guard !report.outcome.isEngagement else {
            try DeliveryFeedback(db: db, config: rules.config).applyEngagement(report)
            return []
        }
        // A webhook's attempt that another follows, or its message parked: the notifier's bookkeeping, for operators.
        if report.outcome == .retrying || report.outcome == .parked { return [] }
        // A webhook's outcome counts for its experiment arm; it changes nothing a segment reads (no reachability).
        if report.channel == .webhook {
            _ = try DeliveryFeedback(db: db, config: rules.config).apply(report)
            return []
        }
        let now = rules.clock()
        var outputs: [PendingOutput] = []
        if rules.isActive, let key = record.keyString {
            try SegmentBackfill(db: db, rules: rules, now: now).evaluateAhead(key: key)
        }
        let applied = try DeliveryFeedback(db: db, config: rules.config).apply(report)
        if let applied, applied.reachabilityChanged {
            outputs.append(try ContactSnapshots.output(db, key: applied.key))
        }
        guard rules.isActive, let key = record.keyString else { return outputs }
        // Feedback changes reachability (tokens, bounces, marketing states) and the last push date; an uninstall is an
        // event, which segments read and campaigns trigger on.
        var campaigns = CampaignDecider(db: db, rules: rules, now: now)
        let uninstalls = applied?.uninstalls ?? []
        var changes: Set<ChangeKey> = [.namespace(.native), .namespace(.push), .namespace(.email), .namespace(.sms)]
        if !uninstalls.isEmpty { changes.insert(.event(UninstallTracking.eventName)) }
        let transitions = try SegmentEvaluator(db: db, rules: rules, now: now).profileChanged(
            key: key, changes: changes, cause: "delivery \(record.offset)")
        try campaigns.segmentsChanged(transitions)
        let conversions = CampaignConversions(db: db, rules: rules)
        for uninstall in uninstalls {
            try conversions.eventHappened(key: key, uninstall)
            try campaigns.eventHappened(key: key, uninstall)
        }
        return outputs + campaigns.outputs
    }

    /// The write re-produced to the profile `customID` (nil: its home); dead-lettered after `maxHops`.
    static func forward(_ write: Write, to customID: String?) -> PendingOutput {
        guard write.hops < maxHops else {
            let moved = write.alias.map { "alias \($0.label)/\($0.name)" } ?? "installation \(write.installationID ?? "")"
            return deadLetter(write.record, reason: "\(moved) moved between profiles \(write.hops) times while this write followed it")
        }
        return write.rerouted(customID: customID)
    }

    package static func deadLetter(_ record: KafkaRecord, reason: String) -> PendingOutput {
        .deadLetter(record, service: "orchestrator", reason: reason)
    }
}
