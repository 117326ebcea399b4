import GRDB
import PartitionStore
import Shared

/// The notifier's view of a profile's reachability (`herald.contacts`, compacted, keyed by profile): email and SMS
/// with their marketing states, and every installation with its token, environment, permission and opt-out.
/// A profile that is gone gives a tombstone.
package enum ContactSnapshot {
    static func output(_ db: Database, key: String) throws -> PendingOutput {
        guard let row = try Row.fetchOne(
            db.cachedStatement(sql: "SELECT * FROM profiles WHERE profile_key = ?"), arguments: [key])
        else {
            return PendingOutput(topic: HeraldTopic.contacts.name, key: key, value: nil)
        }
        let installations = try Row.fetchAll(
            db.cachedStatement(sql: "SELECT * FROM installations WHERE profile_key = ? ORDER BY installation_id"),
            arguments: [key]
        ).map { installation in
            JSONValue.object([
                JSONMember("installation_id", .string(installation["installation_id"])),
                JSONMember("app", ProfileView.text(installation, "app")),
                JSONMember("dev", .bool(installation["dev"])),
                JSONMember("token", ProfileView.text(installation, "token")),
                JSONMember("environment", ProfileView.text(installation, "environment")),
                JSONMember("notification_permission", ProfileView.text(installation, "notification_permission")),
                JSONMember("opted_out", .bool(installation["opted_out"])),
                JSONMember("push_reachable", .bool(pushReachable(installation))),
            ])
        }
        let snapshot = JSONValue.object([
            JSONMember("v", .number("1")), JSONMember("kind", .string("contact")),
            JSONMember("project", ProfileView.text(row, "project")),
            JSONMember("custom_id", ProfileView.text(row, "custom_id")),
            JSONMember("email", ProfileView.email(row)), JSONMember("sms", ProfileView.sms(row)),
            JSONMember("installations", .array(installations)),
            JSONMember("updated_at", ProfileView.text(row, "updated_at")),
        ])
        return PendingOutput(topic: HeraldTopic.contacts.name, key: key, value: snapshot.serialized)
    }

    /// `b.is_push_optin`: a token, notifications displayed, and not opted out. (A provisional or undecided permission
    /// still lets a background push through; the notifier decides per push type.)
    static func pushReachable(_ installation: Row) -> Bool {
        guard installation["token"] as String? != nil, !(installation["opted_out"] as Bool) else { return false }
        return NotificationPermission.displaying.contains(installation["notification_permission"] as String? ?? "")
    }
}
