import Foundation
import GRDB
import PartitionStore
import Shared

/// The inbox: every push delivered to an installation, kept per installation and per custom ID (one notification per
/// send for a custom ID, however many of its devices received it) in the partition of the profile it was sent to.
enum InboxStore {
    static func migrate(_ migrator: inout DatabaseMigrator) {
        migrator.registerMigration("notifier v2: inbox") { db in
            try db.execute(sql: """
                CREATE TABLE inbox (
                    project TEXT NOT NULL, app TEXT NOT NULL, owner_kind TEXT NOT NULL, owner_id TEXT NOT NULL,
                    notification_id TEXT NOT NULL, send_id TEXT NOT NULL, installation_id TEXT, custom_id TEXT,
                    sent_at INTEGER NOT NULL, source TEXT NOT NULL, title TEXT, body TEXT, attachment_url TEXT,
                    silent INTEGER NOT NULL, payload BLOB NOT NULL,
                    read INTEGER NOT NULL DEFAULT 0, opened INTEGER NOT NULL DEFAULT 0, deleted INTEGER NOT NULL DEFAULT 0,
                    PRIMARY KEY (project, app, owner_kind, owner_id, notification_id)) WITHOUT ROWID;
                CREATE INDEX inbox_newest ON inbox (project, app, owner_kind, owner_id, sent_at, notification_id);
                CREATE INDEX inbox_age ON inbox (sent_at);
                CREATE TABLE installations (
                    project TEXT NOT NULL, installation_id TEXT NOT NULL, profile_key TEXT NOT NULL, opted_out INTEGER NOT NULL,
                    PRIMARY KEY (project, installation_id, profile_key)) WITHOUT ROWID;
                CREATE INDEX installations_by_profile ON installations (profile_key);
                """)
            for row in try Row.fetchAll(db, sql: "SELECT profile_key, snapshot FROM contacts") {
                try indexInstallations(db, key: row["profile_key"], contact: Contact.parse(Array(row["snapshot"] as Data)))
            }
        }
    }

    /// Keeps the installation → profile index (with the opt-out) in step with a contact snapshot (nil: deleted).
    static func indexInstallations(_ db: Database, key: String, contact: Contact?) throws {
        try db.executeCached(sql: "DELETE FROM installations WHERE profile_key = ?", arguments: [key])
        guard let contact else { return }
        for installation in contact.installations {
            try db.executeCached(
                sql: "INSERT OR REPLACE INTO installations (project, installation_id, profile_key, opted_out) VALUES (?, ?, ?, ?)",
                arguments: [contact.project, installation.id, key, installation.optedOut])
        }
    }

    /// A deleted profile's inbox goes with it: its custom ID's notifications and those of its installations.
    static func forget(_ db: Database, key: String) throws {
        let parts = key.split(separator: "/", maxSplits: 1).map(String.init)
        guard parts.count == 2 else { return }
        let installations = try String.fetchAll(
            db, sql: "SELECT installation_id FROM installations WHERE profile_key = ?", arguments: [key])
        for id in installations {
            try db.execute(
                sql: "DELETE FROM inbox WHERE project = ? AND owner_kind = 'install' AND owner_id = ?", arguments: [parts[0], id])
        }
        if !parts[1].hasPrefix("install/") {
            try db.execute(
                sql: "DELETE FROM inbox WHERE project = ? AND owner_kind = 'custom' AND owner_id = ?", arguments: [parts[0], parts[1]])
        }
    }

    /// Whether an installation known here opted out (nil: unknown here).
    static func optedOut(_ db: Database, project: String, installationID: String) throws -> Bool? {
        let flags = try Bool.fetchAll(
            db, sql: "SELECT opted_out FROM installations WHERE project = ? AND installation_id = ?", arguments: [project, installationID])
        return flags.isEmpty ? nil : flags.contains(true)
    }

    /// Whose inbox: an installation's (`install`) or a custom ID's (`custom`), within one app of a project.
    struct Owner: Sendable, Hashable {
        enum Kind: String, Sendable { case install, custom }
        var project: String
        var app: String
        var kind: Kind
        var id: String
    }

    /// Where a page starts: strictly older than this notification.
    struct Cursor: Sendable, Equatable {
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

    struct Notification: Sendable, Equatable {
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
        var payload: [UInt8]
        var read: Bool
        var opened: Bool

        var cursor: Cursor { Cursor(sentAt: sentAt, notificationID: notificationID) }

        init(row: Row) {
            notificationID = row["notification_id"]
            sendID = row["send_id"]
            installationID = row["installation_id"]
            customID = row["custom_id"]
            sentAt = row["sent_at"]
            source = row["source"]
            title = row["title"]
            body = row["body"]
            attachmentURL = row["attachment_url"]
            silent = row["silent"]
            payload = Array(row["payload"] as Data)
            read = row["read"]
            opened = row["opened"]
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

    /// Keeps a push delivered to an installation. Not kept: test sends, sends to a raw token, and installations
    /// registered with a dev API key. A send is one notification per owner (a replay changes nothing).
    static func store(_ db: Database, send: SendRequest, target: DeliveryTarget, contact: Contact?, at: Date) throws {
        guard send.channel == .push, send.test != true, send.token == nil, let installationID = target.installationID,
            let app = target.app
        else { return }
        let installation = contact?.installations.first { $0.id == installationID }
        guard installation?.dev != true else { return }
        let customID = contact?.customID ?? send.customID
        let payload = Data(APNsProvider.payload(send))
        var owners = [(Owner.Kind.install, installationID)]
        if let customID { owners.append((.custom, customID)) }
        for (kind, id) in owners {
            try db.executeCached(
                sql: """
                    INSERT INTO inbox (project, app, owner_kind, owner_id, notification_id, send_id, installation_id, custom_id,
                        sent_at, source, title, body, attachment_url, silent, payload)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING
                    """,
                arguments: [
                    send.project, app, kind.rawValue, id, send.sendID, send.sendID, installationID, customID, microseconds(at),
                    source(send), send.content["title"], send.content["body"], send.content["image_url"],
                    APNsProvider.isBackground(send), payload,
                ])
            if db.changesCount > 0 { NotifierMetrics.storedInInbox() }
        }
    }

    /// Up to `limit` notifications older than `cursor`, newest first (deleted ones never; silent ones when asked).
    static func page(_ db: Database, owner: Owner, before cursor: Cursor?, limit: Int, includeSilent: Bool) throws -> [Notification] {
        var sql = "SELECT * FROM inbox WHERE project = ? AND app = ? AND owner_kind = ? AND owner_id = ? AND deleted = 0"
        var arguments: StatementArguments = [owner.project, owner.app, owner.kind.rawValue, owner.id]
        if !includeSilent { sql += " AND silent = 0" }
        if let cursor {
            sql += " AND (sent_at < ? OR (sent_at = ? AND notification_id < ?))"
            arguments += [cursor.sentAt, cursor.sentAt, cursor.notificationID]
        }
        sql += " ORDER BY sent_at DESC, notification_id DESC LIMIT ?"
        arguments += [limit]
        return try Row.fetchAll(db, sql: sql, arguments: arguments).map(Notification.init(row:))
    }

    enum Mark: String, Sendable { case read, opened, deleted }

    /// Marks one notification; false when the owner has no such notification (or it was deleted).
    static func mark(_ db: Database, owner: Owner, notificationID: String, _ mark: Mark) throws -> Bool {
        let set = switch mark {
        case .read: "read = 1"
        case .opened: "opened = 1, read = 1"
        case .deleted: "deleted = 1"
        }
        try db.execute(
            sql: """
                UPDATE inbox SET \(set) WHERE project = ? AND app = ? AND owner_kind = ? AND owner_id = ?
                    AND notification_id = ? AND deleted = 0
                """, arguments: [owner.project, owner.app, owner.kind.rawValue, owner.id, notificationID])
        return db.changesCount > 0
    }

    /// The order key of one of the owner's notifications (deleted or not), for mark-all-read.
    static func cursor(_ db: Database, owner: Owner, notificationID: String) throws -> Cursor? {
        try Row.fetchOne(
            db, sql: """
                SELECT sent_at FROM inbox WHERE project = ? AND app = ? AND owner_kind = ? AND owner_id = ? AND notification_id = ?
                """, arguments: [owner.project, owner.app, owner.kind.rawValue, owner.id, notificationID]
        ).map { Cursor(sentAt: $0["sent_at"], notificationID: notificationID) }
    }

    /// Marks read every notification not newer than `until` (never one that arrives later); returns how many changed.
    static func markAllRead(_ db: Database, owner: Owner, until: Cursor) throws -> Int {
        try db.execute(
            sql: """
                UPDATE inbox SET read = 1 WHERE project = ? AND app = ? AND owner_kind = ? AND owner_id = ? AND read = 0
                    AND (sent_at < ? OR (sent_at = ? AND notification_id <= ?))
                """,
            arguments: [owner.project, owner.app, owner.kind.rawValue, owner.id, until.sentAt, until.sentAt, until.notificationID])
        return db.changesCount
    }

    /// Deletes notifications sent before `cutoff` (the retention); returns how many.
    static func purge(_ db: Database, before cutoff: Date) throws -> Int {
        try db.execute(sql: "DELETE FROM inbox WHERE sent_at < ?", arguments: [microseconds(cutoff)])
        return db.changesCount
    }
}
