import CoreMetrics
import Foundation
import GRDB
import PartitionStore
import Shared

/// Applies the records of the notifier's topics to a partition's database, inside the batch's transaction: contact
/// snapshots (kept, indexed for the inbox, releasing the sends that waited for them), send requests (queued once per
/// send id, or held until their time) and delivery reports read back (their targets finished here too). Returns dead
/// letters for what cannot be read.
enum NotifierApplier {
    static func apply(_ db: Database, record: KafkaRecord, now: Date) throws -> [PendingOutput] {
        let key = record.keyString ?? ""
        switch HeraldTopic(rawValue: record.topic) {
        case .deliveries:
            try applyReport(db, record: record, now: now)
            return []
        case .contacts:
            guard let value = record.value else { return try erase(db, key: key, record: record, now: now) }
            guard let contact = Contact.parse(value) else { return [deadLetter(record, reason: "not a contact snapshot", now: now)] }
            try forgetInstallations(db, key: key, keeping: contact)
            try SendsTable(db).releaseWaiting(profile: key)
            try ContactsTable(db).set(key, contact, snapshot: value, at: now)
            Contact.recent.remember(contact, for: key, decodedFrom: value)
            return []
        default:
            return try applySend(db, record: record, now: now)
        }
    }

    /// The profile is gone (its contact tombstone): every row of every table keyed by it goes (its contact, feedback,
    /// inbox, the installations it held and their badges, its sends and their ledger rows), and when the tombstone names
    /// an erasure (`herald-erasure`), this partition's part of its receipt goes to `herald.erasures` (docs/data-rights.md).
    private static func erase(_ db: Database, key: String, record: KafkaRecord, now: Date) throws -> [PendingOutput] {
        var removed = try ProfileRows.count(db, key: key)
        // Badges are kept by installation: those of the installations no profile of the partition holds any more go.
        let badges = try forgetInstallations(db, key: key, keeping: nil)
        if badges > 0 { removed[InstallationBadgesTable.name] = badges }
        try Inbox.forget(db, key: key)
        try ProfileRows.delete(db, key: key)
        guard let erasure = record.header(ErasureReceipt.header).map({ String(decoding: $0, as: UTF8.self) }) else { return [] }
        let receipt = ErasureReceipt(
            erasure: erasure, project: ProfileKey.project(of: key), profileKey: key, service: "notifier", removed: removed,
            tombstones: [HeraldTopic.stateNotifier.name: removed.values.reduce(0, +)], at: now)
        return [PendingOutput(topic: HeraldTopic.erasures.name, key: key, value: try Wire.encode(receipt))]
    }

    /// The profile's installations are now those of `contact` (nil: the profile is gone): one that no profile of this
    /// partition holds any more takes its badge count along (one that moved to another profile here keeps it), and the
    /// feedback the snapshot made moot goes (docs/retention.md). Both grew without bound before: a user looping new
    /// installations and tokens on one profile left a row for each.
    /// Returns how many badge counts went.
    @discardableResult
    private static func forgetInstallations(_ db: Database, key: String, keeping contact: Contact?) throws -> Int {
        let installations = InboxInstallationsTable(db)
        let kept = Set(contact?.installations.map(\.id) ?? [])
        let project = contact?.project ?? ProfileKey.project(of: key)
        let gone = try installations.ids(key).filter { !kept.contains($0) }
        try installations.index(key, contact: contact)
        var badges = 0
        for installationID in gone where try installations.holders(project: project, installationID: installationID).isEmpty {
            badges += try InstallationBadgesTable(db).delete(project: project, installationID: installationID)
        }
        try FeedbackTable(db).prune(key, keeping: contact)
        return badges
    }

    /// A send request: queued once per send id (a replayed outbox or a redelivered batch is not queued again), or held
    /// until its time when it was decided ahead of it.
    private static func applySend(_ db: Database, record: KafkaRecord, now: Date) throws -> [PendingOutput] {
        guard let value = record.value else { return [deadLetter(record, reason: "a null value on a send topic", now: now)] }
        let send: SendRequest
        do {
            send = try Wire.decode(SendRequest.self, from: value)
        } catch {
            return [deadLetter(record, reason: error.description, now: now)]
        }
        guard HeraldTopic(rawValue: record.topic) == send.channel.topic else {
            return [deadLetter(record, reason: "a \(send.channel.rawValue) send on \(record.topic)", now: now)]
        }
        let held = send.notBefore.map { $0 > now } ?? false
        if try SendsTable(db).insert(send, request: value, held: held, receivedAt: now) {
            SendClaims.arrivedRequests.remember(send, for: send.sendID, decodedFrom: value)
        } else {
            NotifierMetrics.duplicateSends.increment()
        }
        return []
    }

    static func deadLetter(_ record: KafkaRecord, reason: String, now: Date) -> PendingOutput {
        .deadLetter(record, service: "notifier", reason: reason, at: now)
    }

    /// A delivery report read back: its target is finished, whichever instance finished it. Recorded in the ledger
    /// (a new row, or a row not finished here), so that a replayed send does not reach that target again. A row still
    /// `sending` here is finished too: its partition came back to this instance while an attempt was out, and that
    /// attempt's answer came while the partition was away (reported late, read back now); the row would otherwise stay
    /// `sending` until a restart made the attempt again. Reports that name no target of a send (a recipient's own
    /// unsubscribe), engagement (an open, a click: the target was finished before), reports of the surfaces apps read
    /// (in-app messages, content cards) and unreadable ones are left to the orchestrator.
    static func applyReport(_ db: Database, record: KafkaRecord, now: Date) throws {
        guard let value = record.value, let report = try? Wire.decode(DeliveryReport.self, from: value),
            !report.outcome.isEngagement, let channel = report.channel.message,
            let sendID = report.sendID, let targetID = report.targetID ?? legacyTargetID(report, sendID: sendID),
            report.outcome != .retrying  // a webhook's attempt that another follows: nothing finished
        else { return }
        let state: LedgerState =
            switch report.outcome {
            case .sent: .sent
            case .suppressed: .suppressed
            case .parked: .parked
            default: .failed
            }
        try LedgerTable(db).finishedElsewhere(
            sendID: sendID, targetID: targetID, channel: channel, profileKey: report.profileKey ?? record.keyString ?? "",
            state: state, reason: report.reason, at: now)
    }

    /// The target of a report written before `target_id` was a field: its id is `<send id>/<target id>/<outcome>`.
    static func legacyTargetID(_ report: DeliveryReport, sendID: String) -> String? {
        let prefix = sendID + "/"
        let suffix = "/" + report.outcome.rawValue
        guard report.id.hasPrefix(prefix), report.id.hasSuffix(suffix), report.id.count > prefix.count + suffix.count else { return nil }
        return String(report.id.dropFirst(prefix.count).dropLast(suffix.count))
    }
}
