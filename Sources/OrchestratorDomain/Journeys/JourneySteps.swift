import Foundation
import GRDB
import Logging
import PartitionStore
import Shared
import Synchronization

/// Journeys walked (docs/journeys.md): instances entered on events and segment changes, moved on by what their waits
/// name and by their timers, taken out by exit rules. Each step is made in the transaction of what caused it (the
/// batch, or the timer's run), with the instance's new node and its outputs: a replay finds the step made. A message
/// (or card) node is decided as a campaign (`JourneyDefinition.campaign(node:)`, `CampaignDecider.decide`): the same
/// subscription state, quiet hours, caps, Liquid and reports, with a send id of (journey, version, entry, node).
struct JourneySteps {
    let db: Database
    let rules: EngagementRules
    let now: Date

    private static let logger = Logger(label: "herald.journeys")

    // MARK: What moves instances

    /// An event of the profile: the exit rules and waits of its instances in flight, then the journeys it enters.
    func eventHappened(key: String, _ context: TriggerContext, _ decider: inout CampaignDecider) throws {
        let project = ProfileKey.project(of: key)
        guard rules.journeys.projects.contains(project), let name = context.eventName else { return }
        if rules.journeys.namedEvents.contains("\(project)/\(name)"), !rules.journeyEventRate.admits(key: key, at: context.at) {
            return JourneyEventRate.refused(key: key, event: name)
        }
        for var instance in try JourneyInstancesTable(db).inFlight(key: key) {
            guard let (journey, entry) = try resolve(&instance) else { continue }
            let read = { (path: SegmentPath) in
                path.namespace == "entry" ? entry.entryValue(path.names.joined(separator: ".")) : context.value(path.namespace, path.names.joined(separator: "."))
            }
            let exits = journey.exits.contains { rule in
                guard case .event(name, let condition) = rule else { return false }
                return condition?.matches(at: now, read: read) ?? true
            }
            if exits {
                try end(&instance, journey, reason: .exitRule)
                continue
            }
            guard let node = instance.node, case .wait(let branches, _, _)? = journey.nodes[node]?.step else { continue }
            for branch in branches {
                guard case .event(name, let condition, let next) = branch, condition?.matches(at: now, read: read) ?? true else { continue }
                try TimersTable(db).delete(key: key, kind: .journey, ref: Self.timerRef(instance, node: node))
                try walk(&instance, journey, from: next, entry, &decider)
                break
            }
        }
        for journey in rules.journeys.byEntryEvent["\(project)/\(name)"] ?? [] {
            if case .event(_, let condition?) = journey.entry {
                guard condition.matches(at: now, read: { context.value($0.namespace, $0.names.joined(separator: ".")) }) else { continue }
            }
            try enter(journey, key: key, context, &decider)
        }
    }

    /// Segment entries and exits: exit rules and waits on segments, then the journeys they enter.
    func segmentsChanged(_ transitions: [SegmentTransition], _ decider: inout CampaignDecider) throws {
        for transition in transitions where rules.journeys.projects.contains(ProfileKey.project(of: transition.key)) {
            let segment = transition.segment.definition.id
            for var instance in try JourneyInstancesTable(db).inFlight(key: transition.key) {
                guard let (journey, entry) = try resolve(&instance) else { continue }
                let exits = journey.exits.contains { rule in
                    rule == (transition.entered ? .segmentEntry(segment: segment) : .segmentExit(segment: segment))
                }
                if exits {
                    try end(&instance, journey, reason: .exitRule)
                    continue
                }
                guard transition.entered, let node = instance.node, case .wait(let branches, _, _)? = journey.nodes[node]?.step else { continue }
                for branch in branches {
                    guard case .segment(segment, let next) = branch else { continue }
                    try TimersTable(db).delete(key: transition.key, kind: .journey, ref: Self.timerRef(instance, node: node))
                    try walk(&instance, journey, from: next, entry, &decider)
                    break
                }
            }
            let entering = (transition.entered ? rules.journeys.bySegmentEntry : rules.journeys.bySegmentExit)[transition.segment.key] ?? []
            for journey in entering {
                let direction = transition.entered ? "entry" : "exit"
                try enter(
                    journey, key: transition.key,
                    TriggerContext(
                        type: transition.entered ? .segmentEntry : .segmentExit,
                        occurrence: "\(direction) \(segment) \(transition.cause)", at: now),
                    &decider)
            }
        }
    }

    /// A delay's end or a wait's timeout (`ref`: `<journey key> <node> <entry id>`): the instance goes on, if it is
    /// still at that node.
    func timerDue(_ timer: DurableTimer, _ decider: inout CampaignDecider) throws {
        let parts = timer.ref.split(separator: " ", maxSplits: 2, omittingEmptySubsequences: false).map(String.init)
        guard parts.count == 3,
            var instance = try JourneyInstancesTable(db).instance(key: timer.profileKey, journey: parts[0], entryID: parts[2]),
            instance.node == parts[1]
        else { return }
        let version = instance.version
        // Migrated now (its timer set anew, re-anchored): that timer goes on with it.
        guard let (journey, entry) = try resolve(&instance), instance.version == version else { return }
        switch journey.nodes[parts[1]]?.step {
        case .delay(_, let next)?:
            try walk(&instance, journey, from: next, entry, &decider)
        case .wait(_, _, let timeoutNext)?:
            JourneyMetrics.timedOut(journey, node: parts[1])
            try walk(&instance, journey, from: timeoutNext, entry, &decider)
        case .some:
            // Parked at a node that takes no time (a migration's target): it runs now.
            try walk(&instance, journey, from: parts[1], entry, &decider)
        case nil:
            try end(&instance, journey, reason: .lost)
        }
    }

    /// An update node's write was applied to the profile: its instance goes on from the node, if it is still there.
    func updated(key: String, _ update: JourneyUpdate, _ decider: inout CampaignDecider) throws {
        guard var instance = try JourneyInstancesTable(db).instance(key: key, journey: update.journey, entryID: update.entryID),
            instance.node == update.node, let (journey, entry) = try resolve(&instance), instance.node == update.node
        else { return }
        switch journey.nodes[update.node]?.step {
        case .update(_, let next)?: try walk(&instance, journey, from: next, entry, &decider)
        case .some: try walk(&instance, journey, from: update.node, entry, &decider)
        case nil: try end(&instance, journey, reason: .lost)
        }
    }

    /// The orchestrator's own record of an update node, to the profile's key: its id names the instance's version,
    /// entry and node, so that a step made again after a crash is the same write, applied once.
    static func updateRecord(_ edit: ProfileEdit, _ instance: JourneyInstance, node: String, at now: Date) -> PendingOutput {
        let record = IngestRecord(
            .journeyUpdate(JourneyUpdate(journey: instance.journey, entryID: instance.entryID, node: node, profile: edit)),
            id: "journey \(instance.version) \(instance.entryID) \(node)", project: ProfileKey.project(of: instance.profileKey),
            source: .orchestrator, customID: nil, installationID: nil, receivedAt: now)
        return PendingOutput(topic: HeraldTopic.ingest.name, key: instance.profileKey, value: record.value, headers: record.headers(requestID: nil))
    }

    // MARK: Entering and walking

    /// Enters the profile if the audience and the re-entry rule let it; a replayed entry is the instance it made.
    func enter(_ journey: JourneyDefinition, key: String, _ context: TriggerContext, _ decider: inout CampaignDecider) throws {
        if let audience = journey.audience {
            guard try SegmentBackfill(db: db, rules: rules, now: now).isMember(key, ofSegment: "\(journey.project)/\(audience)") else {
                JourneyMetrics.entry(journey, .notInAudience)
                return
            }
        }
        let table = JourneyInstancesTable(db)
        guard try ProfilesTable(db).exists(key), try table.instance(key: key, journey: journey.key, entryID: context.occurrence) == nil
        else { return }
        let (inFlight, last) = try table.entries(key: key, journey: journey.key)
        let allowed =
            switch journey.reentry {
            case .never: last == nil
            case .after(let period): last.map { now.timeIntervalSince($0) >= period } ?? true
            case .maxConcurrent(let count): inFlight < count
            }
        guard allowed else {
            JourneyMetrics.entry(journey, .reentryRefused)
            return
        }
        try table.keep(journey, at: now)
        // A local-time run enters its members a little ahead of their instant: they enter at it.
        let at = max(now, context.at)
        var instance = JourneyInstance(
            profileKey: key, journey: journey.key, entryID: context.occurrence, version: journey.version, node: journey.start,
            since: at, enteredAt: at, entry: context.json)
        _ = try table.insert(instance)
        JourneyMetrics.entry(journey, .entered)
        try walk(&instance, journey, from: journey.start, context, &decider)
    }

    /// Walks from `start` through the nodes that take no time, to the delay or wait the instance stops at (its
    /// timer set) or to its end.
    func walk(
        _ instance: inout JourneyInstance, _ journey: JourneyDefinition, from start: String, _ entry: TriggerContext,
        _ decider: inout CampaignDecider
    ) throws {
        var name = start
        // A validated graph has no cycle: at most one pass per node.
        for _ in 0...journey.nodes.count {
            guard let node = journey.nodes[name] else { break }
            JourneyMetrics.reached(journey, node: name)
            switch node.step {
            case .message(_, let next), .card(_, let next):
                var context = entry
                context.occurrence = "journey \(instance.version) \(instance.entryID)"
                // Sent at the entry's instant when entered ahead of it (a local-time run), else now.
                context.at = max(now, entry.at)
                if let campaign = journey.campaign(node: name) { try decider.decide(campaign, key: instance.profileKey, context) }
                name = next
            case .split(let branches, let otherwise):
                let values = ProfileValues(db: db, key: instance.profileKey, rules: rules)
                let read = { (path: SegmentPath) in
                    path.namespace == "entry" ? entry.entryValue(path.names.joined(separator: ".")) : values.read(path)
                }
                name = branches.first { $0.condition.matches(at: now, read: read) }?.next ?? otherwise
            case .experiment(let arms):
                name = JourneyArms.arm(arms, journey: journey.key, node: name, profileKey: instance.profileKey).next
            case .update(let edit, _):
                // Applied through the write path (`journey_update`, keyed by the profile: after every write before it);
                // the instance goes on from here once it is (`updated`), so what follows reads the profile it made.
                try stop(&instance, at: name, until: nil)
                decider.output(Self.updateRecord(edit, instance, node: name, at: now))
                return
            case .exit:
                instance.node = name
                try end(&instance, journey, reason: .completed, waited: false)
                return
            case .delay(let delay, _):
                try stop(&instance, at: name, until: due(delay, key: instance.profileKey))
                return
            case .wait(let branches, let timeout, _):
                // A segment the profile is already in lets it through at once.
                let met = try branches.first { branch in
                    guard case .segment(let id, _) = branch else { return false }
                    return try SegmentBackfill(db: db, rules: rules, now: now).isMember(instance.profileKey, ofSegment: "\(journey.project)/\(id)")
                }
                if let met {
                    name = met.next
                    continue
                }
                try stop(&instance, at: name, until: now.addingTimeInterval(timeout))
                return
            }
        }
        try end(&instance, journey, reason: .lost, waited: false)
    }

    /// The instance waits at `node` until `due` (its timer), or until what it waits for says so (nil: no timer).
    private func stop(_ instance: inout JourneyInstance, at node: String, until due: Date?) throws {
        instance.node = node
        instance.since = now
        try JourneyInstancesTable(db).move(instance)
        guard let due else { return }
        try TimersTable(db).set(key: instance.profileKey, kind: .journey, ref: Self.timerRef(instance, node: node), due: due)
    }

    /// The instance ends (its timer, if it `waited` at its node, deleted); ended instances stay for re-entry.
    private func end(_ instance: inout JourneyInstance, _ journey: JourneyDefinition?, reason: JourneyMetrics.Ending, waited: Bool = true) throws {
        if waited, let node = instance.node {
            try TimersTable(db).delete(key: instance.profileKey, kind: .journey, ref: Self.timerRef(instance, node: node))
        }
        let at = instance.node.map { "\(reason.rawValue) \($0)" } ?? reason.rawValue
        instance.node = nil
        instance.since = now
        instance.ended = at
        try JourneyInstancesTable(db).move(instance)
        JourneyMetrics.ended(journeyKey: instance.journey, reason)
    }

    /// When a delay ends: after its duration, or at the next local time of day (on one of its weekdays) in the
    /// profile's time zone.
    func due(_ delay: JourneyDefinition.Delay, key: String) -> Date {
        switch delay {
        case .duration(let seconds): return now.addingTimeInterval(seconds)
        case .until(let time, let weekdays):
            let zone = ProfileValues(db: db, key: key, rules: rules).timeZone
            let today = WallClock.local(now, in: zone).day
            for offset in 0...7 {
                let day = today.adding(days: offset)
                // 1970-01-01 was a Thursday (4, Sunday being 0).
                let weekday = ((day.daysSinceEpoch + 4) % 7 + 7) % 7
                guard weekdays.isEmpty || weekdays.contains(weekday) else { continue }
                if let instant = WallClock.instant(day, time, in: zone), instant > now { return instant }
            }
            return now.addingTimeInterval(7 * 86_400)
        }
    }

    static func timerRef(_ instance: JourneyInstance, node: String) -> String { "\(instance.journey) \(node) \(instance.entryID)" }

    // MARK: Versions

    /// The version the instance entered and its entry; nil (and the instance ended) when its journey is no longer
    /// configured or its version cannot be read.
    private func resolve(_ instance: inout JourneyInstance) throws -> (JourneyDefinition, TriggerContext)? {
        guard let current = rules.config.journeys[instance.journey] else {
            try end(&instance, nil, reason: .removed)
            return nil
        }
        var journey = current
        // One the partition's reconcile has not moved yet (restored since): moved now.
        if current.version != instance.version, try JourneyMigration(db: db, rules: rules, now: now).migrate(&instance, to: current) {
            guard instance.node != nil else { return nil }
        } else if current.version != instance.version {
            guard let kept = try Self.kept(instance.journey, version: instance.version, db) else {
                try end(&instance, nil, reason: .lost)
                return nil
            }
            journey = kept
        }
        guard let entry = TriggerContext(json: instance.entry) else {
            try end(&instance, journey, reason: .lost)
            return nil
        }
        return (journey, entry)
    }

    /// Versions read from `journey_versions`, once per process.
    private static let versions = Mutex<[String: JourneyDefinition]>([:])

    private static func kept(_ journey: String, version: String, _ db: Database) throws -> JourneyDefinition? {
        let cacheKey = "\(journey) \(version)"
        if let found = versions.withLock({ $0[cacheKey] }) { return found }
        guard let source = try JourneyInstancesTable(db).definition(journey: journey, version: version),
            let definition = JourneyDefinition.stored(source)
        else {
            logger.error("a journey version kept in the partition cannot be read", metadata: ["journey": "\(journey)", "version": "\(version)"])
            return nil
        }
        versions.withLock { $0[cacheKey] = definition }
        return definition
    }
}
