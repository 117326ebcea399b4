import Foundation
import GRDB
import Logging
import Metrics
import PartitionStore
import Shared

/// Triggers turned into campaign decisions (docs/campaigns.md): segment entries and exits, events (which also cancel
/// waiting delays), API triggers, timers and schedules. A decision waits the campaign's delay on a durable timer, or is
/// made now: expiry, audience, re-eligibility, the experiment's control group and variant (`ExperimentAssignment`),
/// quiet hours (`QuietHoursHold`), frequency caps (`FrequencyCaps`), then each message rendered (`MessageRenderer`,
/// with the variant's template) and written as a send request to the outbox.
struct CampaignDecider {
    let db: Database
    let rules: EngagementRules
    let now: Date
    /// Send requests and dead letters, in the order they were decided.
    private(set) var outputs: [PendingOutput] = []

    /// An output of the same transaction that is not a decision (an uninstall-tracking probe).
    mutating func output(_ output: PendingOutput) { outputs.append(output) }

    init(db: Database, rules: EngagementRules, now: Date) {
        self.db = db
        self.rules = rules
        self.now = now
    }

    private static let logger = Logger(label: "herald.campaigns")

    /// Segment entries and exits trigger the campaigns that start on them.
    mutating func segmentsChanged(_ transitions: [SegmentTransition]) throws {
        try JourneySteps(db: db, rules: rules, now: now).segmentsChanged(transitions, &self)
        for transition in transitions {
            let direction = transition.entered ? "entry" : "exit"
            let campaigns = (transition.entered ? rules.entryCampaigns : rules.exitCampaigns)[transition.segment.key] ?? []
            for campaign in campaigns {
                try trigger(
                    campaign, key: transition.key,
                    TriggerContext(
                        type: transition.entered ? .segmentEntry : .segmentExit,
                        occurrence: "\(direction) \(transition.segment.definition.id) \(transition.cause)", at: now))
            }
        }
    }

    /// An event happened to the profile: it cancels the waiting delays of campaigns that cancel on it, and triggers
    /// the campaigns it starts (when their condition on the event holds).
    mutating func eventHappened(key: String, _ context: TriggerContext) throws {
        let project = ProfileKey.project(of: key)
        guard let name = context.eventName else { return }
        for campaign in rules.cancellers["\(project)/\(name)"] ?? [] {
            let cancelled = try TimersTable(db).cancelWaiting(key: key, campaign: campaign.key)
            if cancelled > 0 { CampaignMetrics.decision(campaign, .cancelled, by: cancelled) }
        }
        for campaign in rules.eventCampaigns["\(project)/\(name)"] ?? [] {
            if case .event(_, let condition?) = campaign.trigger {
                let holds = condition.matches(at: now) { path in context.value(path.namespace, path.names.joined(separator: ".")) }
                guard holds else { continue }
            }
            try trigger(campaign, key: key, context)
        }
        try JourneySteps(db: db, rules: rules, now: now).eventHappened(key: key, context, &self)
    }

    /// Something the app of the profile `key` reported (a session start, a notification opened): the campaigns it
    /// triggers whose condition holds on it.
    mutating func appTriggered(key: String, _ kind: AppTrigger, _ context: TriggerContext) throws {
        for campaign in rules.appCampaigns["\(ProfileKey.project(of: key))/\(kind.rawValue)"] ?? [] {
            if case .app(_, let condition?) = campaign.trigger {
                let holds = condition.matches(at: now) { path in context.value(path.namespace, path.names.joined(separator: ".")) }
                guard holds else { continue }
            }
            try trigger(campaign, key: key, context)
        }
    }

    /// A server's API trigger of a campaign, or API entry of a journey, for the profile `key`: one that is not
    /// triggered by the API (or not enabled), or a profile that does not exist, sends the record to the dead letters.
    mutating func apiTriggered(key: String, _ target: WriteEffects.APITarget, _ context: TriggerContext, record: KafkaRecord) throws {
        let project = ProfileKey.project(of: key)
        let campaign: CampaignDefinition?
        let journey: JourneyDefinition?
        let (noun, id): (String, String)
        switch target {
        case .campaign(let name):
            (noun, id) = ("campaign", name)
            campaign = rules.config.campaigns["\(project)/\(name)"].flatMap { $0.trigger == .api && $0.enabled ? $0 : nil }
            journey = nil
        case .journey(let name):
            (noun, id) = ("journey", name)
            journey = rules.config.journeys["\(project)/\(name)"].flatMap { $0.entry == .api && $0.enabled ? $0 : nil }
            campaign = nil
        }
        guard campaign != nil || journey != nil else {
            let reason = noun == "campaign" ? "no enabled API-triggered campaign \(id)" : "no enabled journey \(id) entered by the API"
            outputs.append(OrchestratorApplier.deadLetter(record, reason: reason))
            return
        }
        guard try ProfilesTable(db).exists(key) else {
            outputs.append(OrchestratorApplier.deadLetter(record, reason: "no profile \(key) for \(noun) \(id)"))
            return
        }
        if let campaign { try trigger(campaign, key: key, context) }
        if let journey { try JourneySteps(db: db, rules: rules, now: now).enter(journey, key: key, context, &self) }
    }

    /// A trigger fired for the profile: wait the campaign's delay (on a timer), or decide now. One delay per campaign
    /// and profile waits at a time: a trigger while one waits is counted `already_waiting` and dropped (the waiting one
    /// decides; the timers hold one row per campaign and profile, not one per event).
    mutating func trigger(_ campaign: CampaignDefinition, key: String, _ context: TriggerContext) throws {
        // A journey's scheduled entry: the profile its run reached enters the journey.
        if let journeyKey = campaign.enters {
            guard let journey = rules.config.journeys[journeyKey], journey.enabled else { return }
            return try JourneySteps(db: db, rules: rules, now: now).enter(journey, key: key, context, &self)
        }
        if let delay = campaign.delay {
            let timers = TimersTable(db)
            let ref = "\(campaign.key) \(context.occurrence)"
            guard try !timers.isDelayWaiting(key: key, campaign: campaign.key, except: ref) else {
                CampaignMetrics.decision(campaign, .alreadyWaiting)
                return
            }
            try timers.set(key: key, kind: .delay, ref: ref, due: context.at.addingTimeInterval(delay), payload: context.json)
            CampaignMetrics.decision(campaign, .delayed)
            return
        }
        try decide(campaign, key: key, context)
    }

    /// Decides whether the profile gets the campaign's messages now (expiry, audience, re-eligibility, quiet hours,
    /// frequency caps), renders them, and writes the send requests to the outbox.
    mutating func decide(_ campaign: CampaignDefinition, key: String, _ context: TriggerContext) throws {
        guard campaign.enabled else { return }
        if let expiry = campaign.expiresAfter, now.timeIntervalSince(context.at) > expiry {
            CampaignMetrics.decision(campaign, .expired)
            Self.logger.info("late send dropped", metadata: ["campaign": "\(campaign.key)", "occurrence": "\(context.occurrence)"])
            return
        }
        if let audience = campaign.audience {
            // A segment still being backfilled is evaluated for the profile now.
            guard try SegmentBackfill(db: db, rules: rules, now: now).isMember(key, ofSegment: "\(campaign.project)/\(audience)") else {
                CampaignMetrics.decision(campaign, .notInAudience)
                return
            }
        }
        guard try eligible(campaign, key: key) else {
            CampaignMetrics.decision(campaign, .notEligible)
            return
        }
        let values = ProfileValues(db: db, key: key, rules: rules)
        guard values.exists else {
            CampaignMetrics.decision(campaign, .noProfile)
            return
        }
        // The experiment before quiet hours, caps and rates: the control group is the profiles the campaign would
        // have reached, whatever holds their messages back.
        var assignment: (version: String, variant: String)?
        // When the campaign meant to decide (the trigger's time, plus its delay), on the clock of the events that may
        // convert: an event the same request carried after the trigger is after the assignment, and a replay records
        // the same time.
        let assignedAt = context.at.addingTimeInterval(campaign.delay ?? 0)
        // A global holdout group holds back every marketing campaign it does not exempt (transactional messages are
        // never held: a password reset is not marketing).
        for group in rules.holdouts[campaign.project] ?? [] where !group.exempts(campaign) {
            guard ExperimentAssignment.isHeldOut(key, by: group) else { continue }
            try record(campaign, key: key, (group.version, group.variant), at: assignedAt)
            try heldBack(campaign, key: key, context, outcome: .holdout)
            return
        }
        if let experiment = campaign.experiment {
            let assigned = ExperimentAssignment.assign(experiment, project: campaign.project, campaign: campaign.id, profileKey: key)
            try record(campaign, key: key, assigned, at: assignedAt)
            if assigned.variant == Experiment.control {
                try heldBack(campaign, key: key, context, outcome: .control)
                return
            }
            assignment = assigned
        }
        // Quiet hours and frequency caps hold messages; cards do not interrupt anyone (a campaign of cards only
        // delivers them at once).
        if !campaign.messages.isEmpty {
            guard try QuietHoursHold(db: db, rules: rules, now: now).allowsNow(campaign, key: key, values: values, context) else {
                return
            }
        }
        // Every message over a frequency cap: not decided at all (a later trigger may still send it).
        let caps = FrequencyCaps(db: db, rules: rules, now: now)
        let capped = !rules.config.frequencyCaps(of: campaign).isEmpty && !campaign.messages.isEmpty
        if capped, campaign.cards.isEmpty, try !campaign.messages.contains(where: { try caps.allow(campaign, key: key, channel: $0.channel) }) {
            for message in campaign.messages { caps.capped(campaign, channel: message.channel, occurrence: context.occurrence) }
            return
        }
        guard try CampaignHistoryTable(db).record(campaign: campaign.key, key: key, occurrence: context.occurrence, at: now)
        else { return }  // decided before for this occurrence
        // A campaign counting conversions without an experiment: its recipients' windows start at their first decision.
        if campaign.experiment == nil, !campaign.conversions.isEmpty {
            _ = try ExperimentAssignmentsTable(db).record(
                key, campaign: campaign.key, version: CampaignConversions.noExperiment, variant: Experiment.message, at: assignedAt)
        }
        let renderer = MessageRenderer(rules: rules, now: now)
        let delivered = try deliverCards(campaign, values: values, context, renderer: renderer)
        var aborted = 0
        for (index, message) in campaign.messages.enumerated() {
            let step = "message-\(index)"
            if capped, try !caps.allow(campaign, key: key, channel: message.channel) {
                caps.capped(campaign, channel: message.channel, occurrence: context.occurrence)
                continue
            }
            do {
                var variantMessage = message
                variantMessage.template = message.template(variant: assignment?.variant)
                var request = try renderer.render(campaign, message: variantMessage, step: step, values: values, context)
                request.experiment = assignment?.version
                request.variant = assignment?.variant
                try caps.count(campaign, key: key, channel: message.channel, sendID: request.sendID)
                outputs.append(
                    PendingOutput(
                        topic: message.channel.topic.name, key: key, value: try Wire.encode(request),
                        headers: [KafkaHeader(HeraldHeader.sendID, request.sendID)]))
                CampaignMetrics.decision(campaign, .sent)
                // The middle link of the correlation chain (ingest request log → this → the notifier's delivery line).
                // No profile key: the send id leads to it.
                var metadata: Logger.Metadata = [
                    "campaign": "\(campaign.key)", "send_id": "\(request.sendID)", "channel": "\(message.channel.rawValue)",
                    "trigger": "\(context.type.rawValue)",
                ]
                if let id = context.requestID { metadata["request_id"] = "\(id)" }
                if let id = context.eventID { metadata["event_id"] = "\(id)" }
                Self.logger.info("send decided", metadata: metadata)
            } catch let error as TemplateError {
                if let reason = error.aborted {
                    // The template decided not to send (`abort_message`): no dead letter, no cap counted.
                    aborted += 1
                    CampaignMetrics.decision(campaign, .aborted)
                    Self.logger.info(
                        "message aborted by its template",
                        metadata: [
                            "campaign": "\(campaign.key)", "step": "\(step)", "reason": "\(reason)",
                            "send_id": "\(MessageRenderer.sendID(campaign: campaign.key, step: step, profileKey: key, occurrence: context.occurrence))",
                        ])
                    continue
                }
                CampaignMetrics.decision(campaign, .renderFailed)
                outputs.append(
                    renderer.failure(campaign, step: step, key: key, occurrence: context.occurrence, reason: error.message))
            }
        }
        // Nothing was sent: the decision does not count towards re-eligibility either.
        if aborted == campaign.messages.count, delivered == 0 {
            try CampaignHistoryTable(db).forget(campaign: campaign.key, key: key, occurrence: context.occurrence)
        }
    }

    /// Records the profile's assignment, and counts it the first time.
    private func record(_ campaign: CampaignDefinition, key: String, _ assignment: (version: String, variant: String), at time: Date) throws {
        if try ExperimentAssignmentsTable(db).record(key, campaign: campaign.key, version: assignment.version, variant: assignment.variant, at: time) {
            CampaignMetrics.assigned(campaign, assignment)
        }
    }

    /// A profile a control or holdout group holds back: nothing sent, and the decision counts towards re-eligibility,
    /// as a send would (`outcome` on the decisions' metric).
    private func heldBack(_ campaign: CampaignDefinition, key: String, _ context: TriggerContext, outcome: DecisionOutcome) throws {
        if try CampaignHistoryTable(db).record(campaign: campaign.key, key: key, occurrence: context.occurrence, at: now) {
            CampaignMetrics.decision(campaign, outcome)
        }
    }

    /// The campaign's content cards put into the profile's feed; returns how many were (a replay's count too).
    private mutating func deliverCards(
        _ campaign: CampaignDefinition, values: ProfileValues, _ context: TriggerContext, renderer: MessageRenderer
    ) throws -> Int {
        var delivered = 0
        let delivery = ContentCardDelivery(db: db, config: rules.config, now: now)
        for (index, id) in campaign.cards.enumerated() {
            guard let card = rules.config.contentCards["\(campaign.project)/\(id)"] else { continue }
            let step = "card-\(index)"
            switch try delivery.deliver(card, campaign: campaign, step: step, values: values, context) {
            case .delivered(let cardID):
                delivered += 1
                CampaignMetrics.decision(campaign, .cardDelivered)
                Self.logger.info(
                    "content card delivered",
                    metadata: ["campaign": "\(campaign.key)", "card": "\(card.key)", "card_id": "\(cardID)", "trigger": "\(context.type.rawValue)"])
            case .repeated: delivered += 1
            case .capped: CampaignMetrics.decision(campaign, .cardCapped)
            case .expired: CampaignMetrics.decision(campaign, .cardExpired)
            case .failed(let reason):
                CampaignMetrics.decision(campaign, .renderFailed)
                outputs.append(renderer.failure(campaign, step: step, key: values.key, occurrence: context.occurrence, reason: reason))
            }
        }
        return delivered
    }

    /// Once per profile, at most N per period, or always.
    func eligible(_ campaign: CampaignDefinition, key: String) throws -> Bool {
        let history = CampaignHistoryTable(db)
        switch campaign.reeligibility {
        case .always: return true
        case .once: return try !history.any(campaign: campaign.key, key: key)
        case .limit(let limit, let period):
            return try history.count(campaign: campaign.key, key: key, since: now.addingTimeInterval(-period)) < limit
        }
    }
}

/// `herald_campaign_decisions_total{campaign,outcome}`, `herald_experiment_assignments_total{campaign,version,variant}`.
enum CampaignMetrics {
    static func decision(_ campaign: CampaignDefinition, _ outcome: DecisionOutcome, by amount: Int = 1) {
        Counter(label: "herald_campaign_decisions_total", dimensions: [("campaign", campaign.key), ("outcome", outcome.rawValue)])
            .increment(by: amount)
    }

    static func assigned(_ campaign: CampaignDefinition, _ assignment: (version: String, variant: String)) {
        Counter(
            label: "herald_experiment_assignments_total",
            dimensions: [("campaign", campaign.key), ("version", assignment.version), ("variant", assignment.variant)]
        ).increment()
    }
}
