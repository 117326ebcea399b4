import Crypto
import Foundation
import GRDB
import PartitionStore
import Logging
import Metrics
import Shared
import Synchronization

/// What made a campaign consider a profile, kept whole in a delay's timer.
struct TriggerContext: Sendable {
    var type: String
    var eventName: String?
    /// The record that triggered (event or API call), if any.
    var eventID: String?
    /// Makes the send id unique per trigger: the same occurrence gives the same send.
    var occurrence: String
    var at: Date
    /// The event's typed attributes (`price.f`), its label, or the API call's properties.
    var attributes: JSONValue?
    var label: String?
    var properties: JSONValue?
    /// The ingest request behind the trigger, if any (kept through delays).
    var requestID: String?

    var json: JSONValue {
        var members: [JSONMember] = [
            JSONMember("type", .string(type)), JSONMember("occurrence", .string(occurrence)),
            JSONMember("at", .string(WireTime.format(at))),
        ]
        if let eventName { members.append(JSONMember("event_name", .string(eventName))) }
        if let eventID { members.append(JSONMember("event_id", .string(eventID))) }
        if let attributes { members.append(JSONMember("attributes", attributes)) }
        if let label { members.append(JSONMember("label", .string(label))) }
        if let properties { members.append(JSONMember("properties", properties)) }
        if let requestID { members.append(JSONMember("request_id", .string(requestID))) }
        return .object(members)
    }

    init(
        type: String, eventName: String? = nil, eventID: String? = nil, occurrence: String, at: Date,
        attributes: JSONValue? = nil, label: String? = nil, properties: JSONValue? = nil, requestID: String? = nil
    ) {
        self.type = type
        self.eventName = eventName
        self.eventID = eventID
        self.occurrence = occurrence
        self.at = at
        self.attributes = attributes
        self.label = label
        self.properties = properties
        self.requestID = requestID
    }

    init?(json: JSONValue) {
        guard let type = json["type"]?.stringValue, let occurrence = json["occurrence"]?.stringValue,
            let at = json["at"]?.stringValue.flatMap(WireTime.parse)
        else { return nil }
        self.init(
            type: type, eventName: json["event_name"]?.stringValue, eventID: json["event_id"]?.stringValue,
            occurrence: occurrence, at: at, attributes: json["attributes"], label: json["label"]?.stringValue,
            properties: json["properties"], requestID: json["request_id"]?.stringValue)
    }

    /// A value of the trigger for conditions and templates: `event.<attribute>`, `event.label`, `trigger.<property>`.
    func value(_ namespace: String, _ name: String) -> SegmentValue? {
        if namespace == "event" {
            if name == "label" { return label.map(SegmentValue.string) }
            return attributes.flatMap { ProfileValues.attribute($0, name) }
        }
        guard namespace == "trigger", let properties, let value = properties[name] else { return nil }
        return ProfileValues.value(type: "", json: value)
    }
}

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
    private static let evaluationsMetric = Counter(label: "herald_segment_evaluations_total")

    // MARK: Segments

    /// Re-evaluates the segments of the profile that read one of `changes`; an entry fires the segment's entry
    /// campaigns (its occurrence named by `cause`). A profile that is gone leaves every segment.
    mutating func profileChanged(key: String, changes: Set<String>, cause: String) throws {
        let values = ProfileValues(db: db, key: key)
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

    // MARK: Events

    /// An event happened to the profile: it cancels the waiting delays of campaigns that cancel on it, and triggers
    /// the campaigns it starts (when their condition on the event holds).
    mutating func eventHappened(key: String, _ context: TriggerContext) throws {
        let project = ProfileKey.project(of: key)
        guard let name = context.eventName else { return }
        for campaign in rules.cancellers["\(project)/\(name)"] ?? [] {
            try db.executeCached(
                sql: "DELETE FROM timers WHERE profile_key = ? AND kind = 'delay' AND ref >= ? AND ref < ?",
                arguments: [key, "\(campaign.key) ", "\(campaign.key)!"])
            if db.changesCount > 0 { count(campaign, "cancelled", by: db.changesCount) }
        }
        for campaign in rules.eventCampaigns["\(project)/\(name)"] ?? [] {
            if case .event(_, let condition?) = campaign.trigger {
                let holds = condition.matches(at: now) { path in context.value(path.namespace, path.names.joined(separator: ".")) }
                guard holds else { continue }
            }
            try trigger(campaign, key: key, context)
        }
    }

    // MARK: Campaigns

    /// A trigger fired for the profile: wait the campaign's delay (on a timer), or decide now.
    mutating func trigger(_ campaign: CampaignDefinition, key: String, _ context: TriggerContext) throws {
        if let delay = campaign.delay {
            try setTimer(
                key: key, kind: "delay", ref: "\(campaign.key) \(context.occurrence)",
                due: context.at.addingTimeInterval(delay), payload: context.json)
            count(campaign, "delayed")
            return
        }
        try decide(campaign, key: key, context)
    }

    /// Decides whether the profile gets the campaign's messages now (expiry, audience, re-eligibility), renders them,
    /// and writes the send requests to the outbox.
    mutating func decide(_ campaign: CampaignDefinition, key: String, _ context: TriggerContext) throws {
        guard campaign.enabled else { return }
        if let expiry = campaign.expiresAfter, now.timeIntervalSince(context.at) > expiry {
            count(campaign, "expired")
            Logger(label: "herald.campaigns").info(
                "late send dropped", metadata: ["campaign": "\(campaign.key)", "profile": "\(key)", "occurrence": "\(context.occurrence)"])
            return
        }
        if let audience = campaign.audience {
            let member = try Bool.fetchOne(
                db.cachedStatement(sql: "SELECT 1 FROM segment_members WHERE segment_key = ? AND profile_key = ?"),
                arguments: ["\(campaign.project)/\(audience)", key]) ?? false
            guard member else {
                count(campaign, "not_in_audience")
                return
            }
        }
        guard try eligible(campaign, key: key) else {
            count(campaign, "not_eligible")
            return
        }
        let values = ProfileValues(db: db, key: key)
        guard values.exists else {
            count(campaign, "no_profile")
            return
        }
        try db.executeCached(
            sql: "INSERT OR IGNORE INTO campaign_history (campaign_key, profile_key, occurrence, at) VALUES (?, ?, ?, ?)",
            arguments: [campaign.key, key, context.occurrence, WireTime.format(now)])
        guard db.changesCount == 1 else { return }  // decided before for this occurrence
        for (index, message) in campaign.messages.enumerated() {
            let step = "message-\(index)"
            do {
                let request = try render(campaign, message: message, step: step, values: values, context)
                outputs.append(
                    PendingOutput(
                        topic: message.channel.topic.name, key: key, value: try Wire.encode(request),
                        headers: [KafkaHeader("herald-send-id", request.sendID)]))
                count(campaign, "sent")
                // The middle link of the correlation chain (ingest request log → this → the notifier's delivery line).
                // No profile key: the send id leads to it.
                var metadata: Logger.Metadata = [
                    "campaign": "\(campaign.key)", "send_id": "\(request.sendID)", "channel": "\(message.channel.rawValue)",
                    "trigger": "\(context.type)",
                ]
                if let id = context.requestID { metadata["request_id"] = "\(id)" }
                if let id = context.eventID { metadata["event_id"] = "\(id)" }
                Logger(label: "herald.campaigns").info("send decided", metadata: metadata)
            } catch let error as TemplateError {
                count(campaign, "render_failed")
                outputs.append(
                    renderFailure(campaign, step: step, key: key, occurrence: context.occurrence, reason: error.message))
            }
        }
    }

    /// Once per profile, at most N per period, or always.
    private func eligible(_ campaign: CampaignDefinition, key: String) throws -> Bool {
        switch campaign.reeligibility {
        case .always: return true
        case .once:
            return try Bool.fetchOne(
                db.cachedStatement(sql: "SELECT 1 FROM campaign_history WHERE campaign_key = ? AND profile_key = ? LIMIT 1"),
                arguments: [campaign.key, key]) == nil
        case .limit(let limit, let period):
            let recent = try Int.fetchOne(
                db.cachedStatement(
                    sql: "SELECT count(*) FROM campaign_history WHERE campaign_key = ? AND profile_key = ? AND at > ?"),
                arguments: [campaign.key, key, WireTime.format(now.addingTimeInterval(-period))]) ?? 0
            return recent < limit
        }
    }

    /// The send request of one message, whole: every placeholder has a value or a default, or nothing is sent.
    private func render(
        _ campaign: CampaignDefinition, message: CampaignDefinition.Message, step: String, values: ProfileValues,
        _ context: TriggerContext
    ) throws -> SendRequest {
        guard let template = rules.config.templates["\(campaign.project)/\(message.template)"] else {
            throw TemplateError(offset: 0, message: "no template \(message.template)")
        }
        let fallback = rules.config.defaultLanguage(project: campaign.project)
        guard let variant = template.variant(language: values.language, fallback: fallback) else {
            throw TemplateError(offset: 0, message: "template \(template.id) has no variant for \(values.language ?? "no language"), default or \(fallback)")
        }
        let read = { (path: String) -> String? in
            let names = path.split(separator: ".", maxSplits: 1).map(String.init)
            if names[0] == "event" || names[0] == "trigger" { return context.value(names[0], names[1])?.text }
            return values.text(path)
        }
        var content: [String: String] = [:]
        for (name, text) in variant.fields {
            do { content[name] = try text.render(read) } catch { throw TemplateError(offset: 0, message: "\(template.id).\(variant.language).\(name): \(error.message)") }
        }
        var payload: [String: String]?
        if !template.payload.isEmpty {
            payload = [:]
            for (name, text) in template.payload {
                do { payload?[name] = try text.render(read) } catch { throw TemplateError(offset: 0, message: "\(template.id).payload.\(name): \(error.message)") }
            }
        }
        let expiresAt = campaign.expiresAfter.map { context.at.addingTimeInterval($0) }
        var send = SendRequest(
            sendID: Self.sendID(campaign: campaign.key, step: step, profileKey: values.key, occurrence: context.occurrence),
            project: campaign.project, profileKey: values.key, customID: values.profile?["custom_id"],
            channel: message.channel, marketing: campaign.marketing, app: message.app, campaign: campaign.id, step: step,
            occurrence: context.occurrence, template: template.id, language: variant.language, content: content,
            payload: payload,
            trigger: SendRequest.Trigger(type: context.type, eventName: context.eventName, eventID: context.eventID, at: context.at),
            decidedAt: now, expiresAt: expiresAt)
        send.requestID = context.requestID
        send.dueAt = campaign.delay.map { context.at.addingTimeInterval($0) }
        return send
    }

    private func renderFailure(_ campaign: CampaignDefinition, step: String, key: String, occurrence: String, reason: String) -> PendingOutput {
        Logger(label: "herald.campaigns").warning(
            "message not sent: template did not render",
            metadata: ["campaign": "\(campaign.key)", "step": "\(step)", "profile": "\(key)", "reason": "\(reason)"])
        let record = KafkaRecord(
            topic: "campaign:\(campaign.key)", partition: 0, offset: 0, key: Array(key.utf8),
            value: Array("{\"campaign\":\"\(campaign.id)\",\"step\":\"\(step)\",\"occurrence\":\"\(occurrence)\"}".utf8))
        let letter = DeadLetter(service: "orchestrator", reason: "campaign \(campaign.id) \(step): \(reason)", record: record, at: now)
        return PendingOutput(topic: HeraldTopic.dlq.name, key: key, value: (try? Wire.encode(letter)) ?? [])
    }

    /// 32 hex characters of SHA-256 over campaign, step, profile and occurrence.
    static func sendID(campaign: String, step: String, profileKey: String, occurrence: String) -> String {
        let digest = SHA256.hash(data: Data("\(campaign)\u{0}\(step)\u{0}\(profileKey)\u{0}\(occurrence)".utf8))
        return digest.prefix(16).map { String(format: "%02x", $0) }.joined()
    }

    func count(_ campaign: CampaignDefinition, _ outcome: String, by amount: Int = 1) {
        Counter(label: "herald_campaign_decisions_total", dimensions: [("campaign", campaign.key), ("outcome", outcome)])
            .increment(by: amount)
    }
}
