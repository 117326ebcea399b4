import Foundation
import GRDB
import PartitionStore
import Shared

/// Builds a profile's `ContactSnapshot` (`herald.contacts`) from its rows, for the outbox; a profile that is gone gives a
/// tombstone.
package enum ContactSnapshots {
    /// The profile's next snapshot, under a new revision: sends decided from now on name it, so that the notifier
    /// resolves them only once it holds this snapshot (docs/notifier.md, "Waiting for the contact"). Called before the
    /// write's campaigns are decided.
    static func output(_ db: Database, key: String) throws -> PendingOutput {
        guard let row = try ProfilesTable(db).nextContactRevision(key) else {
            return PendingOutput(topic: HeraldTopic.contacts.name, key: key, value: nil)
        }
        return PendingOutput(topic: HeraldTopic.contacts.name, key: key, value: try Wire.encode(try snapshot(db, key: key, row: row)))
    }

    static func snapshot(_ db: Database, key: String, row: Row) throws -> ContactSnapshot {
        func date(_ row: Row, _ column: String) -> Date? { (row[column] as String?).flatMap(WireTime.parse) }
        let installations = try InstallationsTable(db).all(key).map { installation in
            ContactSnapshot.Installation(
                installationID: installation["installation_id"], app: installation["app"], dev: installation["dev"],
                token: installation["token"], environment: (installation["environment"] as String?).flatMap(PushEnvironment.init(rawValue:)),
                notificationPermission: installation["notification_permission"], optedOut: installation["opted_out"],
                pushReachable: pushReachable(installation))
        }
        return ContactSnapshot(
            project: row["project"], customID: row["custom_id"],
            email: .init(
                address: row["email"], marketing: row["email_marketing"],
                marketingChangedAt: date(row, "email_marketing_changed_at"), bouncedAt: date(row, "email_bounced_at")),
            sms: .init(
                phoneNumber: row["phone_number"], marketing: row["sms_marketing"],
                marketingChangedAt: date(row, "sms_marketing_changed_at")),
            installations: installations, updatedAt: date(row, "updated_at"), revision: row["contact_revision"])
    }

    /// `b.is_push_optin`: a token, notifications displayed, and not opted out. (A provisional or undecided permission
    /// still lets a background push through; the notifier decides per push type.)
    static func pushReachable(_ installation: Row) -> Bool {
        guard installation["token"] as String? != nil, !(installation["opted_out"] as Bool) else { return false }
        return NotificationPermission.displaying.contains(installation["notification_permission"] as String? ?? "")
    }
}
