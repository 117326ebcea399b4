import Foundation
import PartitionStore
import Shared

/// The inbox's queries over this instance's partitions.
extension NotifierPartitions {
    /// A page of an owner's inbox over this instance's partitions (an installation's notifications may sit in two: the
    /// anonymous profile's and the identified one's), newest first; `hasMore` when older ones remain.
    func inboxPage(
        _ owner: Inbox.Owner, before cursor: Inbox.Cursor?, limit: Int, includeSilent: Bool
    ) async throws -> (notifications: [Inbox.Notification], hasMore: Bool) {
        var all: [Inbox.Notification] = []
        for (_, database) in await self.owner.openDatabases {
            all += try await database.read { db in
                try InboxTable(db).page(owner, before: cursor, limit: limit + 1, includeSilent: includeSilent)
            }
        }
        all.sort { ($0.sentAt, $0.notificationID) > ($1.sentAt, $1.notificationID) }
        return (Array(all.prefix(limit)), all.count > limit)
    }

    /// Marks one notification read, opened or deleted; false when the owner has no such notification.
    func inboxMark(_ owner: Inbox.Owner, notificationID: String, _ mark: Inbox.Mark) async throws -> Bool {
        var found = false
        for (_, database) in await self.owner.openDatabases {
            let changed = try await database.write { db in try InboxTable(db).mark(owner, notificationID: notificationID, mark) }
            found = found || changed
        }
        return found
    }

    /// Marks read what is not newer than `notificationID`; nil when the owner has no such notification.
    func inboxMarkAllRead(_ owner: Inbox.Owner, until notificationID: String) async throws -> Int? {
        var until: Inbox.Cursor?
        for (_, database) in await self.owner.openDatabases where until == nil {
            until = try await database.read { db in try Inbox.cursor(db, owner: owner, notificationID: notificationID) }
        }
        guard let until else { return nil }
        var marked = 0
        for (_, database) in await self.owner.openDatabases {
            marked += try await database.write { db in try InboxTable(db).markAllRead(owner, until: until) }
        }
        return marked
    }

    /// What this instance's partitions know of an installation (from the contact snapshots): whether it opted out (nil:
    /// unknown here), and the custom IDs of the named profiles that hold it (none: it is anonymous, or unknown here).
    func installation(project: String, installationID: String) async throws -> (optedOut: Bool?, users: [String]) {
        var optedOut: Bool?
        var users: [String] = []
        for (_, database) in await self.owner.openDatabases {
            let holders = try await database.read { db in try InboxInstallationsTable(db).holders(project: project, installationID: installationID) }
            for holder in holders {
                optedOut = (optedOut ?? false) || holder.optedOut
                if let customID = ProfileKey.customID(of: holder.profileKey, project: project) { users.append(customID) }
            }
        }
        return (optedOut, users)
    }

    /// Deletes inbox entries older than the retention; returns how many.
    func purgeInbox(before cutoff: Date) async throws -> Int {
        var purged = 0
        // Running partitions only (a paused one's database fails: purged once it resumes).
        for number in await owner.runningPartitions {
            purged += try await owner.run(on: number) { database in
                try await database.write { db in try Inbox.purge(db, before: cutoff) }
            } ?? 0
        }
        return purged
    }
}
