import Foundation
import GRDB
import PartitionStore
import Shared

/// `inbox`: the pushes delivered, one row per owner (an installation, or a custom ID) and notification, with their
/// read, opened and deleted marks (docs/inbox.md).
struct InboxTable {
    let db: Database

    init(_ db: Database) { self.db = db }

    /// Keeps a notification for an owner; false when it has it (a replayed send).
    func insert(_ owner: Inbox.Owner, _ entry: Inbox.Notification, payload: [UInt8], send: SendRequest) throws -> Bool {
        try db.executeCached(
            sql: """
                INSERT INTO inbox (project, app, owner_kind, owner_id, notification_id, send_id, installation_id, custom_id,
                    sent_at, source, title, body, attachment_url, silent, payload, profile_key, campaign, experiment, variant)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING
                """,
            arguments: [
                owner.project, owner.app, owner.kind.rawValue, owner.id, entry.notificationID, entry.sendID, entry.installationID,
                entry.customID, entry.sentAt, entry.source, entry.title, entry.body, entry.attachmentURL, entry.silent,
                Data(payload), send.profileKey, send.campaign.isEmpty ? nil : send.campaign, send.experiment, send.variant,
            ])
        return db.changesCount > 0
    }

    /// The owner's rows: an installation's, those sent to its current holder (`Owner.heldBy`) and those sent while it was
    /// anonymous (which its id alone opened then), never a previous holder's.
    private static func owned(_ owner: Inbox.Owner) -> (sql: String, arguments: StatementArguments) {
        var sql = "project = ? AND app = ? AND owner_kind = ? AND owner_id = ?"
        var arguments: StatementArguments = [owner.project, owner.app, owner.kind.rawValue, owner.id]
        if owner.kind == .install {
            if let holder = owner.heldBy {
                sql += " AND (custom_id IS NULL OR custom_id = ?)"
                arguments += [holder]
            } else {
                sql += " AND custom_id IS NULL"
            }
        }
        return (sql, arguments)
    }

    /// A notification neither read nor opened yet, as its `opened` report names it; nil when it is read or opened
    /// (`mark` `.opened`: opened), deleted or unknown.
    func opening(_ owner: Inbox.Owner, notificationID: String, _ mark: Inbox.Mark) throws -> Inbox.Opening? {
        let owned = Self.owned(owner)
        return try Row.fetchOne(
            db, sql: """
                SELECT send_id, installation_id, custom_id, profile_key, campaign, experiment, variant FROM inbox
                WHERE \(owned.sql) AND notification_id = ? AND deleted = 0 AND opened = 0
                    \(mark == .opened ? "" : "AND read = 0")
                """, arguments: owned.arguments + [notificationID]
        ).map {
            Inbox.Opening(
                sendID: $0["send_id"], installationID: $0["installation_id"], customID: $0["custom_id"], profileKey: $0["profile_key"],
                campaign: $0["campaign"], experiment: $0["experiment"], variant: $0["variant"])
        }
    }

    /// Up to `limit` notifications older than `cursor`, newest first (deleted ones never; silent ones when asked).
    func page(_ owner: Inbox.Owner, before cursor: Inbox.Cursor?, limit: Int, includeSilent: Bool) throws -> [Inbox.Notification] {
        let owned = Self.owned(owner)
        var sql = "SELECT * FROM inbox WHERE \(owned.sql) AND deleted = 0"
        var arguments = owned.arguments
        if !includeSilent { sql += " AND silent = 0" }
        if let cursor {
            sql += " AND (sent_at < ? OR (sent_at = ? AND notification_id < ?))"
            arguments += [cursor.sentAt, cursor.sentAt, cursor.notificationID]
        }
        sql += " ORDER BY sent_at DESC, notification_id DESC LIMIT ?"
        arguments += [limit]
        return try Row.fetchAll(db, sql: sql, arguments: arguments).map(Inbox.Notification.init(row:))
    }

    /// Marks one notification; false when the owner has no such notification (or it was deleted).
    func mark(_ owner: Inbox.Owner, notificationID: String, _ mark: Inbox.Mark) throws -> Bool {
        let set = switch mark {
        case .read: "read = 1"
        case .opened: "opened = 1, read = 1"
        case .deleted: "deleted = 1"
        }
        let owned = Self.owned(owner)
        try db.execute(
            sql: "UPDATE inbox SET \(set) WHERE \(owned.sql) AND notification_id = ? AND deleted = 0",
            arguments: owned.arguments + [notificationID])
        return db.changesCount > 0
    }

    /// When one of the owner's notifications (deleted or not) was sent.
    func sentAt(_ owner: Inbox.Owner, notificationID: String) throws -> Int64? {
        let owned = Self.owned(owner)
        return try Int64.fetchOne(
            db, sql: "SELECT sent_at FROM inbox WHERE \(owned.sql) AND notification_id = ?", arguments: owned.arguments + [notificationID])
    }

    /// Marks read every notification not newer than `until`; returns how many changed.
    func markAllRead(_ owner: Inbox.Owner, until: Inbox.Cursor) throws -> Int {
        let owned = Self.owned(owner)
        try db.execute(
            sql: "UPDATE inbox SET read = 1 WHERE \(owned.sql) AND read = 0 AND (sent_at < ? OR (sent_at = ? AND notification_id <= ?))",
            arguments: owned.arguments + [until.sentAt, until.sentAt, until.notificationID])
        return db.changesCount
    }

    /// Every notification of an owner of any app (a deleted profile's).
    func deleteOwner(project: String, kind: Inbox.Owner.Kind, id: String) throws {
        try db.execute(
            sql: "DELETE FROM inbox WHERE project = ? AND owner_kind = ? AND owner_id = ?", arguments: [project, kind.rawValue, id])
    }

    /// Deletes notifications sent before `cutoff` (microseconds); returns how many.
    func purge(before cutoff: Int64) throws -> Int {
        try db.execute(sql: "DELETE FROM inbox WHERE sent_at < ?", arguments: [cutoff])
        return db.changesCount
    }
}

extension Inbox.Notification {
    init(row: Row) {
        self.init(
            notificationID: row["notification_id"], sendID: row["send_id"], installationID: row["installation_id"],
            customID: row["custom_id"], sentAt: row["sent_at"], source: row["source"], title: row["title"], body: row["body"],
            attachmentURL: row["attachment_url"], silent: row["silent"], payload: row["payload"] as Data, read: row["read"],
            opened: row["opened"])
    }
}
