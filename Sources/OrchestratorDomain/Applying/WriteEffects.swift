import Foundation
import GRDB
import PartitionStore
import Shared

/// What applying one write did, for the stages after it: the records to produce (the orchestrator's own identity
/// records, tombstones, transactional sends), the profiles whose reachability changed (one contact snapshot each),
/// what changed in which profile (segment change keys, in the order the profiles changed), the events applied and the
/// API triggers (for campaigns).
struct WriteEffects {
    let write: Write
    private(set) var outputs: [PendingOutput] = []
    private(set) var changedContacts: [String] = []
    /// Profiles changed by the write, with what changed, in the order they first changed.
    private(set) var changes: [(key: String, changes: Set<ChangeKey>)] = []
    private var changePositions: [String: Int] = [:]
    /// Events applied (campaign triggers and cancels), and API triggers.
    private(set) var events: [(key: String, trigger: TriggerContext)] = []
    private(set) var apiTriggers: [(key: String, target: APITarget, trigger: TriggerContext)] = []
    /// Journey update nodes whose write was applied (`journey_update`): their instances go on.
    private(set) var journeyUpdates: [(key: String, update: JourneyUpdate)] = []
    /// What the app reported that may trigger campaigns (a session start, a notification opened).
    private(set) var appTriggers: [(key: String, kind: AppTrigger, trigger: TriggerContext)] = []

    init(write: Write) { self.write = write }

    /// `keys` changed in the profile `key` (default: the write's).
    mutating func changed(_ keys: Set<ChangeKey>, at key: String? = nil) {
        let key = key ?? write.profileKey
        if let position = changePositions[key] {
            changes[position].changes.formUnion(keys)
        } else {
            changePositions[key] = changes.count
            changes.append((key, keys))
        }
    }

    /// The profile's reachability changed: its contact snapshot is produced once the write is done.
    mutating func contactChanged(_ key: String) {
        if !changedContacts.contains(key) { changedContacts.append(key) }
    }

    /// An event was applied to `write.profileKey` (its typed attributes as stored, `{"price.f": 9.5}`): its fields
    /// change, and it may trigger campaigns and convert (a purchase with its revenue).
    mutating func eventApplied(name: String, attributes: JSONValue, label: String?, index: Int?, revenueUSD: Double? = nil) {
        changed([.event(name), .namespace(.tags)])
        let id = index.map { "\(write.id)#\($0)" } ?? write.id
        events.append(
            (write.profileKey,
             TriggerContext(
                type: .event, eventName: name, eventID: id, occurrence: "event \(id)", at: write.receivedAt,
                attributes: attributes, label: label, requestID: write.requestID, revenueUSD: revenueUSD,
                fromServer: write.ingest.fromServer)))
    }

    /// A journey's update node was applied to the profile `key`.
    mutating func journeyUpdated(key: String, _ update: JourneyUpdate) {
        journeyUpdates.append((key, update))
    }

    /// What a server's API trigger starts, by id in the profile's project.
    enum APITarget: Sendable, Equatable {
        case campaign(String)
        case journey(String)
    }

    /// A server asked for an API-triggered campaign, or an API-entered journey, for the profile `key`.
    mutating func apiTriggered(key: String, _ target: APITarget, _ trigger: TriggerContext) {
        apiTriggers.append((key, target, trigger))
    }

    /// The app of the write reported `kind` (its attributes typed as event attributes: `{"app.s": "demo-ios"}`).
    mutating func appReported(_ kind: AppTrigger, occurrence: String, attributes: [JSONMember]) {
        appTriggers.append(
            (write.profileKey, kind,
             TriggerContext(
                type: TriggerType(kind), eventID: write.id, occurrence: occurrence, at: write.receivedAt,
                attributes: .object(attributes), requestID: write.requestID)))
    }

    mutating func output(_ output: PendingOutput) { outputs.append(output) }

    /// The profile `key` is gone: its contact snapshot's tombstone.
    mutating func contactGone(_ key: String) {
        outputs.append(PendingOutput(topic: HeraldTopic.contacts.name, key: key, value: nil))
    }

    /// Emits a record of the orchestrator's own (source `orchestrator`), derived from this write: its id is the
    /// write's id and a suffix with a space, which no client id contains; it keeps the write's request id.
    mutating func emit(
        _ payload: IngestPayload, suffix: String, key: String, customID: String? = nil, installationID: String? = nil,
        alias: UserAlias? = nil
    ) {
        let record = IngestRecord(
            payload, id: "\(write.id) \(suffix)", project: write.project, source: .orchestrator, customID: customID,
            installationID: installationID ?? write.installationID, receivedAt: write.receivedAt, alias: alias)
        outputs.append(
            PendingOutput(
                topic: HeraldTopic.ingest.name, key: key, value: record.value, headers: record.headers(requestID: write.requestID)))
    }

    /// Emits a write the reported one stands for (the profile writes of a tapped card's action) as the reporter's own:
    /// its source, custom ID, installation and proof, keyed as it was; its id is the write's and a suffix with a space.
    mutating func emitAsReporter(_ payload: IngestPayload, suffix: String) {
        var record = IngestRecord(
            payload, id: "\(write.id) \(suffix)", project: write.project, source: write.ingest.source, customID: write.ingest.customID,
            installationID: write.installationID, receivedAt: write.receivedAt)
        record.unsigned = write.ingest.unsigned
        outputs.append(
            PendingOutput(topic: HeraldTopic.ingest.name, key: record.key, value: record.value, headers: record.headers(requestID: write.requestID)))
    }

    /// The outputs, then a contact snapshot of each profile whose reachability changed: under a new revision, before
    /// the write's campaigns are decided (their sends name it).
    func outputsWithContacts(_ db: Database) throws -> [PendingOutput] {
        try outputs + changedContacts.map { try ContactSnapshots.output(db, key: $0) }
    }
}
