import Foundation
import PartitionStore
import Shared

/// The inbox's queries over this instance's partitions.
extension NotifierPartitions {
    /// Answers `question` from `partitions`, each running here (as work their revocation waits for); nil when one is
    /// not running here.
    func answer(_ question: InboxQuestion, in partitions: [Int32]) async throws -> InboxAnswer? {
        try await owner.run(onEach: partitions) { database in try await self.answer(question, database) }
            .map { InboxAnswer.combined($0, for: question) }
    }

    private func answer(_ question: InboxQuestion, _ database: PartitionDatabase) async throws -> InboxAnswer {
        switch question {
        case .installation(let project, let installationID):
            // What this partition's contact snapshots know of the installation: whether it opted out, and the custom IDs
            // of the named profiles that hold it (none: it is anonymous, or unknown here).
            let holders = try await database.read { db in
                try InboxInstallationsTable(db).holders(project: project, installationID: installationID)
            }
            return .installation(
                optedOut: holders.isEmpty ? nil : holders.contains { $0.optedOut },
                users: holders.compactMap { ProfileKey.customID(of: $0.profileKey, project: project) })
        case .page(let owner, let cursor, let limit, let includeSilent):
            return .notifications(try await database.read { db in
                try InboxTable(db).page(owner, before: cursor, limit: limit, includeSilent: includeSilent)
            })
        case .mark(let owner, let notificationID, let mark):
            let (changed, _) = try await database.writeWithOutbox { db in
                try Inbox.mark(db, owner, notificationID: notificationID, mark, at: Date())
            }
            if mark != .deleted { await self.owner.scheduleFlush(database.partition) }
            return .changed(changed ? 1 : 0)
        case .find(let owner, let notificationID):
            return .found(try await database.read { db in try Inbox.cursor(db, owner: owner, notificationID: notificationID) })
        case .markAllRead(let owner, let until):
            return .changed(try await database.write { db in try InboxTable(db).markAllRead(owner, until: until) })
        }
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
