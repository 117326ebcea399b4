import Foundation
import GRDB
import PartitionStore
import Shared

/// The inbox: every push delivered to an installation, kept per installation and per custom ID (one notification per
/// send for a custom ID, however many of its devices received it) in the partition of the profile it was sent to
/// (docs/inbox.md). Its rows are `InboxTable`'s; which installation a profile holds, `InboxInstallationsTable`'s.
enum Inbox {
    /// Whose inbox: an installation's (`install`) or a custom ID's (`custom`), within one app of a project.
    struct Owner: Sendable, Hashable, Codable {
        enum Kind: String, Sendable, Codable { case install, custom }
        var project: String
        var app: String
        var kind: Kind
        var id: String
        /// An installation's inbox shows what was sent to its current holder, the user whose proof the app presented
        /// (nil while the installation is anonymous), and what was sent while it was anonymous (which its id alone
        /// opened then): a shared phone's next user never reads the previous user's notifications.
        var heldBy: String?

        init(project: String, app: String, kind: Kind, id: String, heldBy: String? = nil) {
            (self.project, self.app, self.kind, self.id, self.heldBy) = (project, app, kind, id, heldBy)
        }
    }

    /// Where a page starts: strictly older than this notification.
    struct Cursor: Sendable, Equatable, Codable {
        /// Microseconds since 1970 (the order key; notification times are shown in milliseconds).
        var sentAt: Int64
        var notificationID: String

        /// Opaque to clients: base64url of `<sentAt>:<notificationID>`.
        var token: String { Base64URL.encode(Array("\(sentAt):\(notificationID)".utf8)) }

        init(sentAt: Int64, notificationID: String) {
            self.sentAt = sentAt
            self.notificationID = notificationID
        }

        init?(token: String) {
            guard let bytes = Base64URL.decode(token) else { return nil }
            let text = String(decoding: bytes, as: UTF8.self)
            guard let colon = text.firstIndex(of: ":"), let sentAt = Int64(text[..<colon]) else { return nil }
            let id = String(text[text.index(after: colon)...])
            guard !id.isEmpty else { return nil }
            self.init(sentAt: sentAt, notificationID: id)
        }
    }

    struct Notification: Sendable, Equatable, Codable {
        var notificationID: String
        var sendID: String
        var installationID: String?
        var customID: String?
        var sentAt: Int64
        var source: String
        var title: String?
        var body: String?
        var attachmentURL: String?
        var silent: Bool
        /// The raw payload, JSON in its APNs form.
        var payload: Data
        var read: Bool
        var opened: Bool

        var cursor: Cursor { Cursor(sentAt: sentAt, notificationID: notificationID) }

        /// Newest first: by send time, then id.
        static func newerFirst(_ a: Notification, _ b: Notification) -> Bool {
            (a.sentAt, a.notificationID) > (b.sentAt, b.notificationID)
        }
    }

    /// `campaign`, `transactional` or `trigger`, from the send's trigger.
    static func source(_ send: SendRequest) -> String {
        switch APNsProvider.sourceType(send) {
        case "t": "transactional"
        case "c": "campaign"
        default: "trigger"
        }
    }

    static func microseconds(_ date: Date) -> Int64 { Int64((date.timeIntervalSince1970 * 1_000_000).rounded()) }

    /// Keeps a push delivered to an installation. Not kept: test sends, sends to a raw token, installations
    /// registered with a dev API key, and uninstall-tracking probes. A send is one notification per owner (a replay changes
    /// nothing).
    static func store(_ db: Database, send: SendRequest, target: DeliveryTarget, contact: Contact?, at: Date) throws {
        guard send.channel == .push, send.test != true, send.token == nil, !send.isSilentSignal, let installationID = target.installationID,
            let app = target.app
        else { return }
        let installation = contact?.installations.first { $0.id == installationID }
        guard installation?.dev != true else { return }
        let customID = contact?.customID ?? send.customID
        let entry = Notification(
            notificationID: send.sendID, sendID: send.sendID, installationID: installationID, customID: customID,
            sentAt: microseconds(at), source: source(send), title: send.content["title"], body: send.content["body"],
            attachmentURL: send.content["image_url"], silent: APNsProvider.isBackground(send) || APNsProvider.isBadgeOnly(send), payload: Data(), read: false,
            opened: false)
        let payload = APNsProvider.payload(send)
        var owners = [Owner(project: send.project, app: app, kind: .install, id: installationID)]
        if let customID { owners.append(Owner(project: send.project, app: app, kind: .custom, id: customID)) }
        let table = InboxTable(db)
        for owner in owners where try table.insert(owner, entry, payload: payload, send: send) { NotifierMetrics.storedInInbox() }
    }

    /// A deleted profile's inbox goes with it: its custom ID's notifications and those of its installations.
    static func forget(_ db: Database, key: String) throws {
        let parts = key.split(separator: "/", maxSplits: 1).map(String.init)
        guard parts.count == 2 else { return }
        let table = InboxTable(db)
        for id in try InboxInstallationsTable(db).ids(key) { try table.deleteOwner(project: parts[0], kind: .install, id: id) }
        if !parts[1].hasPrefix("install/") { try table.deleteOwner(project: parts[0], kind: .custom, id: parts[1]) }
    }

    /// The order key of one of the owner's notifications (deleted or not), for mark-all-read.
    static func cursor(_ db: Database, owner: Owner, notificationID: String) throws -> Cursor? {
        try InboxTable(db).sentAt(owner, notificationID: notificationID).map { Cursor(sentAt: $0, notificationID: notificationID) }
    }

    /// Deletes notifications sent before `cutoff` (the retention); returns how many.
    static func purge(_ db: Database, before cutoff: Date) throws -> Int {
        try InboxTable(db).purge(before: microseconds(cutoff))
    }

    enum Mark: String, Sendable, Codable { case read, opened, deleted }

    /// A notification's first `read` or `opened` mark (one at a time: not mark-all-read): the push opened, as the app's
    /// open report would say it (the same id, so that the orchestrator counts one open of the push however many ways it
    /// is told).
    struct Opening: Sendable {
        var sendID: String
        var installationID: String?
        var customID: String?
        var profileKey: String?
        var campaign: String?
        var experiment: String?
        var variant: String?

        func report(project: String, at time: Date) -> DeliveryReport {
            let target = installationID ?? "inbox"
            var report = DeliveryReport(
                id: "\(sendID)/\(target)/\(DeliveryReport.Outcome.opened.rawValue)", sendID: sendID, project: project,
                customID: customID, installationID: installationID, channel: .push, outcome: .opened, at: time)
            report.targetID = target
            report.profileKey = profileKey
            report.campaign = campaign
            report.experiment = experiment
            report.variant = variant
            report.reason = "inbox"
            return report
        }
    }

    /// Marks one notification; its first `read` or `opened` mark is reported on `herald.deliveries` (in the same
    /// transaction).
    static func mark(_ db: Database, _ owner: Owner, notificationID: String, _ mark: Mark, at time: Date) throws -> (Bool, [PendingOutput]) {
        let table = InboxTable(db)
        let opening = mark == .deleted ? nil : try table.opening(owner, notificationID: notificationID, mark)
        guard try table.mark(owner, notificationID: notificationID, mark) else { return (false, []) }
        guard let report = opening?.report(project: owner.project, at: time) else { return (true, []) }
        return (true, [PendingOutput(topic: HeraldTopic.deliveries.name, key: report.key, value: try Wire.encode(report))])
    }
}
