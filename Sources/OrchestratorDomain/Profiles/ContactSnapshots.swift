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
        guard let profile = try ProfilesTable(db).nextContactRevision(key) else {
            return PendingOutput(topic: HeraldTopic.contacts.name, key: key, value: nil)
        }
        return PendingOutput(topic: HeraldTopic.contacts.name, key: key, value: try Wire.encode(try snapshot(db, key: key, profile: profile)))
    }

    static func snapshot(_ db: Database, key: String, profile: ProfileRecord) throws -> ContactSnapshot {
        let installations = try InstallationsTable(db).all(key).map { installation in
            ContactSnapshot.Installation(
                installationID: installation.installationID, app: installation.app, dev: installation.dev,
                token: installation.token, environment: installation.environment,
                notificationPermission: installation.notificationPermission, optedOut: installation.optedOut,
                pushReachable: installation.pushReachable)
        }
        return ContactSnapshot(
            project: profile.project, customID: profile.customID,
            email: .init(
                address: profile.email, marketing: profile.emailMarketing, marketingChangedAt: profile.emailMarketingChangedAt,
                bouncedAt: profile.emailBouncedAt),
            sms: .init(phoneNumber: profile.phoneNumber, marketing: profile.smsMarketing, marketingChangedAt: profile.smsMarketingChangedAt),
            installations: installations, updatedAt: profile.updatedAt, revision: profile.contactRevision)
    }
}
