import Foundation
import GRDB
import Metrics
import PartitionStore
import Shared

/// Applies `herald.ingest` and `herald.deliveries` records to a partition's database, inside the batch's transaction,
/// and returns what to produce after the commit (the outbox): contact snapshots, the orchestrator's own identity
/// records, forwarded writes and dead letters.
///
/// Identity (docs/orchestrator.md): an installation's *home key* `<project>/install/<id>` holds its link to a profile
/// and, while it is anonymous, its state and anonymous history. Once linked, the installation's state lives with the
/// profile; writes that name only the installation reach its home and are forwarded to the profile. Every move of an
/// installation between profiles goes through its home, whose records to any one key are produced in order.
package enum ProfileApplier {
    /// A write forwarded between a home and profiles more often than this is dead-lettered: the links kept moving.
    static let maxHops = 8
    /// Writes in Braze's "update only" mode dropped because their profile did not exist.
    static let updateOnlyDropped = Counter(label: "herald_update_only_dropped_total")

    /// Applies a record without segments or campaigns.
    package static func apply(_ db: Database, record: KafkaRecord) throws -> [PendingOutput] {
        try apply(db, record: record, rules: .none)
    }

    package static func apply(_ db: Database, record: KafkaRecord, rules: EngagementRules) throws -> [PendingOutput] {
        if record.topic == HeraldTopic.deliveries.name {
            let outputs = try applyDelivery(db, record: record)
            guard rules.isActive, let key = record.keyString else { return outputs }
            // Feedback changes reachability (tokens, bounces, marketing states) and the last push date.
            var engagement = Engagement(db: db, rules: rules)
            try engagement.profileChanged(key: key, changes: ["b", "push", "email", "sms"], cause: "delivery \(record.offset)")
            return outputs + engagement.outputs
        }
        guard record.topic == HeraldTopic.ingest.name else {
            return [deadLetter(record, reason: "the orchestrator does not read \(record.topic)")]
        }
        let write: Write
        switch Write.read(record) {
        case .success(let read): write = read
        case .failure(let failure): return [deadLetter(record, reason: failure.reason)]
        }
        var context = ApplyContext(db: db, write: write)
        context.config = rules.config
        try context.route()
        var outputs = try context.finish()
        if rules.isActive { outputs += try engage(db, context: context, rules: rules) }
        return outputs
    }

    /// Segments and campaigns after a write: the changed profiles' dependent segments first (so that an audience is
    /// up to date), then the events and API triggers.
    static func engage(_ db: Database, context: ApplyContext, rules: EngagementRules) throws -> [PendingOutput] {
        var engagement = Engagement(db: db, rules: rules)
        for key in context.changeOrder {
            try engagement.profileChanged(key: key, changes: context.changes[key] ?? [], cause: context.write.id)
        }
        for (key, trigger) in context.events { try engagement.eventHappened(key: key, trigger) }
        for (key, campaignID, trigger) in context.apiTriggers {
            guard let campaign = rules.config.campaigns["\(context.write.project)/\(campaignID)"], campaign.trigger == .api,
                campaign.enabled
            else {
                engagement.outputs.append(deadLetter(context.write.record, reason: "no enabled API-triggered campaign \(campaignID)"))
                continue
            }
            guard try ProfileEdits.exists(db, key: key) else {
                engagement.outputs.append(deadLetter(context.write.record, reason: "no profile \(key) for campaign \(campaignID)"))
                continue
            }
            try engagement.trigger(campaign, key: key, trigger)
        }
        return engagement.outputs
    }

    package static func deadLetter(_ record: KafkaRecord, reason: String) -> PendingOutput {
        let letter = DeadLetter(service: "orchestrator", reason: reason, record: record, at: Date())
        return PendingOutput(
            topic: HeraldTopic.dlq.name, key: record.keyString ?? "", value: (try? Wire.encode(letter)) ?? [])
    }

    /// Remembers a record id; false when it was applied before (a replay, which is then a no-op). `at` is when the
    /// record was written (the ingest's time, a report's): the dedupe window counts from then.
    static func firstTime(_ db: Database, project: String, id: String, at: Date) throws -> Bool {
        try RecordDedupe.firstTime(db, scope: project, id: id, at: at)
    }
}

/// One `herald.ingest` record, read (`IngestRecord`, the type the ingest writes with), with the Kafka record it came in.
struct Write {
    let record: KafkaRecord
    let ingest: IngestRecord
    /// `receivedAt` on the wire (formatted once: several rows of a write store it).
    let time: String

    init(record: KafkaRecord, ingest: IngestRecord) {
        self.record = record
        self.ingest = ingest
        time = WireTime.format(ingest.receivedAt)
    }

    var op: IngestOp { ingest.op }
    var id: String { ingest.id }
    var project: String { ingest.project }
    var customID: String? { ingest.customID }
    var installationID: String? { ingest.installationID }
    var receivedAt: Date { ingest.receivedAt }
    var forwarded: Bool { ingest.forwarded }
    var hops: Int { ingest.hops }
    /// `server`, `app` or `orchestrator`.
    var source: String {
        switch ingest.source {
        case .server: "server"
        case .app: "app"
        case .orchestrator: "orchestrator"
        }
    }
    var app: String? { if case .app(let id, _) = ingest.source { id } else { nil } }
    var dev: Bool { if case .app(_, let dev) = ingest.source { dev } else { false } }

    /// The ingest request that carried the write (`herald-request-id`): the correlation id a send and its delivery
    /// logs keep.
    var requestID: String? {
        record.headers.first { $0.name == "herald-request-id" }?.value.map { String(decoding: $0, as: UTF8.self) }
    }

    static func read(_ record: KafkaRecord) -> Result<Write, ReadFailure> {
        guard let bytes = record.value else { return .failure("a null value on herald.ingest") }
        let ingest: IngestRecord
        do {
            ingest = try IngestRecord.read(bytes)
        } catch {
            return .failure(ReadFailure(stringLiteral: error.reason))
        }
        let op = ingest.op
        if case .app = ingest.source, ingest.installationID == nil {
            return .failure("\(op.rawValue) from app without installation_id")
        }
        if IngestOp.aliasOps.contains(op) {
            guard ingest.alias != nil else { return .failure("\(op.rawValue) without alias") }
        } else if op == .pushSend {
            guard ingest.installationID != nil || (ingest.deviceToken != nil && ingest.fields.contains { $0.key == "push" && $0.value["app"] != nil })
            else { return .failure("push_send without installation_id, or without device_token and its app") }
        } else if IngestOp.internalOps.contains(op) || op == .identify || op == .logout {
            guard ingest.installationID != nil || op == .tokenClaim || op == .tokenRelease else {
                return .failure("\(op.rawValue) from \(ingest.source == .orchestrator ? "orchestrator" : "server") without installation_id")
            }
        }
        return .success(Write(record: record, ingest: ingest))
    }

    struct ReadFailure: Error, ExpressibleByStringLiteral, ExpressibleByStringInterpolation {
        let reason: String
        init(stringLiteral value: String) { reason = value }
        init(stringInterpolation: DefaultStringInterpolation) { reason = String(stringInterpolation: stringInterpolation) }
    }

    /// One of the op's fields.
    subscript(name: String) -> JSONValue? { ingest.fields.last { $0.key == name }?.value }

    var isApp: Bool { source == "app" }
    var isInternal: Bool { source == "orchestrator" }
    /// The installation's home key (anonymous profile and link).
    var homeKey: String { ProfileKey.home(project, installationID ?? "") }
    /// The Braze alias the write names its profile by, if any.
    var alias: UserAlias? { ingest.alias }
    /// The alias's home key (alias-only profile and link).
    var aliasKey: String? { alias.map { ProfileKey.alias(project, $0) } }
    /// The key this write applies to: the custom ID's profile, else the alias's home, else the installation's home.
    var profileKey: String { customID.map { ProfileKey.profile(project, $0) } ?? aliasKey ?? homeKey }
    /// Braze's `_update_existing_only`: the write changes a profile that exists, and never creates one.
    var updateExistingOnly: Bool { self["update_existing_only"] == .bool(true) }

    /// This write again, for another key: the same id (applied once, where it lands), another custom ID.
    func rerouted(customID newCustomID: String?) -> PendingOutput {
        var again = ingest
        again.customID = newCustomID
        again.forwarded = true
        again.hops = hops + 1
        return PendingOutput(
            topic: HeraldTopic.ingest.name, key: again.key, value: again.value, headers: [KafkaHeader("herald-op", op.rawValue)])
    }
}

/// The state of applying one record: its outputs, and the profiles whose reachability changed (one contact snapshot
/// each, written when the record is done).
struct ApplyContext {
    let db: Database
    let write: Write
    /// The configuration (segments and campaigns aside, the apps' push categories and the projects' array limits).
    var config = HeraldConfiguration()
    /// The project's array limits (`array_limits`): the most items each array attribute keeps.
    var arrayLimits: [String: Int] { config.projects[write.project]?.arrayLimits ?? [:] }
    var outputs: [PendingOutput] = []
    var changedContacts: [String] = []
    /// Profiles changed by the write, with what changed (segment change keys, `*` for everything), in order.
    var changes: [String: Set<String>] = [:]
    var changeOrder: [String] = []
    /// Events applied (campaign triggers and cancels), and API triggers.
    var events: [(key: String, trigger: TriggerContext)] = []
    var apiTriggers: [(key: String, campaign: String, trigger: TriggerContext)] = []

    init(db: Database, write: Write) {
        self.db = db
        self.write = write
    }

    mutating func changed(_ keys: Set<String>, at key: String? = nil) {
        let key = key ?? write.profileKey
        if changes[key] == nil { changeOrder.append(key) }
        changes[key, default: []].formUnion(keys)
    }

    /// An event was applied to `write.profileKey`: its fields change, and it may trigger campaigns.
    mutating func eventApplied(_ event: JSONValue, index: Int?) {
        guard case .string(let name)? = event["name"] else { return }
        changed(["e.\(name)", "t"])
        let id = index.map { "\(write.id)#\($0)" } ?? write.id
        events.append(
            (write.profileKey,
             TriggerContext(
                type: "event", eventName: name, eventID: id, occurrence: "event \(id)", at: write.receivedAt,
                attributes: event["attributes"], label: event["label"]?.stringValue, requestID: write.requestID)))
    }

    mutating func contactsChanged(_ key: String) {
        if !changedContacts.contains(key) { changedContacts.append(key) }
    }

    func finish() throws -> [PendingOutput] {
        try outputs + changedContacts.map { try ContactSnapshots.output(db, key: $0) }
    }

    /// Emits a record of the orchestrator's own (source `orchestrator`), derived from this write: its id is the
    /// write's id and a suffix with a space, which no client id contains.
    mutating func emit(
        _ op: IngestOp, suffix: String, key: String, customID: String? = nil, installationID: String? = nil,
        alias: UserAlias? = nil, fields: [JSONMember] = []
    ) {
        let record = IngestRecord(
            op: op, id: "\(write.id) \(suffix)", project: write.project, source: .orchestrator, customID: customID,
            installationID: installationID ?? write.installationID, receivedAt: write.receivedAt, fields: fields,
            alias: alias)
        outputs.append(
            PendingOutput(
                topic: HeraldTopic.ingest.name, key: key, value: record.value,
                headers: [KafkaHeader("herald-op", op.rawValue)]))
    }

    /// Decides where the write applies: here, forwarded to the installation's profile, bounced back to its home; then
    /// applies it once (a replayed id is a no-op).
    mutating func route() throws {
        let write = self.write
        if write.isInternal {
            try applyInternal()
            // Identity moves change many fields of the profiles involved: every segment is evaluated again.
            changed(["*"], at: write.record.keyString ?? write.profileKey)
            return
        }
        if write.op == .pushSend {
            try routePushSend()
            return
        }
        if write.isApp, let installationID = write.installationID {
            if write.customID == nil {
                // At the installation's home.
                switch write.op {
                case .logout:
                    guard try firstTime() else { return }
                    try logout()
                    changed(["*"])
                    return
                case .wipe:
                    guard try firstTime() else { return }
                    try wipeAtHome(from: nil)
                    changed(["*"])
                    return
                default:
                    if let linked = try Identity.link(db, project: write.project, installationID: installationID)?.customID {
                        try forward(to: linked)
                        return
                    }
                }
            } else if write.op != .identify {
                let key = write.profileKey
                // One read for both questions: is the installation in this profile, and is it opted out.
                let optedOut = try Installations.optedOut(db, key: key, installationID: installationID)
                let attached = optedOut != nil
                if !attached && write.forwarded {
                    // Forwarded here, but the installation left this profile since: back to its home.
                    try forward(to: nil)
                    return
                }
                guard try firstTime() else { return }
                if write.op == .wipe {
                    try wipeAtProfile()
                    changed(["*"])
                    return
                }
                // An app that names its user is identified: the installation joins the profile if it is not in it.
                if !attached {
                    try attach()
                    changed(["*"])
                }
                try applyOp(optedOut: optedOut)
                return
            }
        }
        if write.alias != nil {
            try routeAliasWrite()
            return
        }
        guard try firstTime() else { return }
        guard try !skipsMissingProfile() else { return }
        try applyOp()
    }

    /// Braze's "update only" mode: a write flagged `update_existing_only` for a profile that does not exist is dropped
    /// (counted), never creating it.
    func skipsMissingProfile() throws -> Bool {
        guard write.updateExistingOnly, try !ProfileEdits.exists(db, key: write.profileKey) else { return false }
        ProfileApplier.updateOnlyDropped.increment()
        return true
    }

    /// Whether this write is applied here for the first time. Ids are remembered per project and per key where the
    /// write applies: a client id (or an `Idempotency-Key`) is the client's to choose, and one reused for another
    /// user's write must not silence it for the dedupe window (the same write replayed comes with the same key).
    func firstTime() throws -> Bool {
        try ProfileApplier.firstTime(
            db, project: write.project, id: "\(write.record.keyString ?? write.profileKey) \(write.id)", at: write.receivedAt)
    }

    /// Re-produces the write to the profile `customID` (nil: the installation's home).
    mutating func forward(to customID: String?) throws {
        guard write.hops < ProfileApplier.maxHops else {
            outputs.append(
                ProfileApplier.deadLetter(
                    write.record,
                    reason: "\(write.alias.map { "alias \($0.label)/\($0.name)" } ?? "installation \(write.installationID ?? "")") moved between profiles \(write.hops) times while this write followed it"))
            return
        }
        outputs.append(write.rerouted(customID: customID))
    }

    /// Applies an op of the ingest at `write.profileKey`; `optedOut`: the installation's opt-out when the caller read it
    /// already.
    mutating func applyOp(optedOut known: Bool? = nil) throws {
        let write = self.write
        let key = write.profileKey
        if write.isApp, let installationID = write.installationID, write.op != .optIn, write.op != .optOut,
            write.op != .identify, try known ?? Installations.optedOut(db, key: key, installationID: installationID) ?? false
        {
            // The SDK sends nothing while opted out; what it sent before and arrives now is dropped (Batch: "data
            // generated while opted out WILL be lost").
            return
        }
        switch write.op {
        case .identify:
            try attach()
            changed(["*"])
        case .profileUpdate:
            try touch()
            if let profile = write["profile"] {
                if try ProfileEdits.applyProfile(db, key: key, profile: profile, at: write.receivedAt, arrayLimits: arrayLimits) {
                    contactsChanged(key)
                }
                changed(ProfileEdits.changeKeys(profile))
            }
            if case .array(let events)? = write["events"] {
                for (index, event) in events.enumerated() {
                    try ProfileEdits.applyEvent(db, key: key, event: event, receivedAt: write.receivedAt)
                    eventApplied(event, index: index)
                }
            }
        case .event:
            try touch()
            if let event = write["event"] {
                try ProfileEdits.applyEvent(db, key: key, event: event, receivedAt: write.receivedAt)
                eventApplied(event, index: nil)
            }
        case .campaignTrigger:
            if let campaign = write["campaign"]?.stringValue {
                apiTriggers.append(
                    (key, campaign,
                     TriggerContext(
                        type: "api", eventID: write.id, occurrence: "api \(write.id)", at: write.receivedAt,
                        properties: write["trigger_properties"], requestID: write.requestID)))
            }
        case .installation:
            try touch()
            if let fields = write["installation"], try Installations.applyFields(db, write: write, fields: fields) {
                contactsChanged(key)
            }
        case .pushToken:
            try touch()
            try pushToken()
        case .location:
            try touch()
            if let location = write["location"] { try Installations.applyLocation(db, write: write, location: location) }
        case .optOut, .optIn:
            try touch()
            if try Installations.setOptedOut(db, write: write, write.op == .optOut) { contactsChanged(key) }
        case .profileDelete:
            try deleteProfile()
            changed(["*"])
        case .logout, .wipe:
            break  // routed in route()
        case .purchase:
            try touch()
            if let purchase = write["purchase"] {
                let event = try Purchases.apply(db, key: key, purchase: purchase, receivedAt: write.receivedAt)
                eventApplied(event, index: nil)
            }
        case .alias, .pushSend:
            break  // routed in routeAliasWrite() and routePushSend()
        case .installLink, .installUnlink, .installDetach, .installMove, .installDrop, .tokenClaim, .tokenRelease,
            .aliasClaim, .aliasRefused, .aliasUnlink, .aliasMove:
            break  // internal, routed in route()
        }
    }

    /// The profile row, and for an app write the installation's row in it (first and last seen).
    mutating func touch() throws {
        let write = self.write
        if try ProfileEdits.ensureProfile(
            db, key: write.profileKey, project: write.project, customID: write.customID, at: write.receivedAt)
        {
            changed(["b.created_at", "b.timezone"])
        }
        if write.isApp {
            try Installations.touch(db, write: write, key: write.profileKey)
            changed(["b.last_visit_date", "b.install_date"])
        }
        if [.installation, .pushToken, .location, .optIn, .optOut].contains(write.op) { changed(["b", "push"]) }
    }
}
