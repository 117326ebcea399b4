import Foundation
import Hummingbird
import PartitionStore
import ServiceSupport
import Shared

/// The inbox over every instance of the notifier: each question goes to the partitions that can hold the answer, the
/// ones this instance runs answered here, the others by their owners (`PartitionPeers`). A custom ID's notifications
/// are in its profile's partition; an installation's in the partitions of every profile that held it, which only a
/// look at all of them finds. Throws `PartitionPeers.Unavailable` when a partition has no owner that answers (a
/// rebalance is moving it): the request is retried, and never answered with a part of the inbox missing.
struct InboxReads: Sendable {
    let partitions: NotifierPartitions
    let peers: PartitionPeers
    /// How many partitions the topics have (`HERALD_TOPIC_PARTITIONS`).
    let partitionCount: Int32

    /// Answers a peer's question about partitions of this instance.
    func answer(on router: Router<ServiceRequestContext>) {
        let partitions = partitions
        peers.answer(InboxQuestion.self, at: InboxQuestion.path, on: router) { question, numbers in
            try await partitions.answer(question, in: numbers)
        }
    }

    func ask(_ question: InboxQuestion, about numbers: [Int32]) async throws -> InboxAnswer {
        let partitions = partitions
        let answers: [InboxAnswer] = try await peers.ask(question, about: numbers, at: InboxQuestion.path) { local in
            try await partitions.answer(question, in: local)
        }
        return InboxAnswer.combined(answers, for: question)
    }

    /// Every partition.
    var all: [Int32] { Array(0..<partitionCount) }

    /// The partitions that can hold `owner`'s notifications.
    func partitions(of owner: Inbox.Owner) -> [Int32] {
        switch owner.kind {
        case .custom: [KeyPartitioner.partition(of: ProfileKey.profile(owner.project, owner.id), partitions: partitionCount)]
        case .install: all
        }
    }

    /// What the contact snapshots of every partition say of an installation: whether it opted out (nil: unknown), and
    /// the custom IDs of the profiles holding it.
    func installation(project: String, installationID: String) async throws -> (optedOut: Bool?, users: [String]) {
        guard case .installation(let optedOut, let users) = try await ask(.installation(project: project, installationID: installationID), about: all)
        else { return (nil, []) }
        return (optedOut, users)
    }

    /// A page of the owner's inbox, newest first; `hasMore` when older notifications remain.
    func page(_ owner: Inbox.Owner, before cursor: Inbox.Cursor?, limit: Int, includeSilent: Bool) async throws
        -> (notifications: [Inbox.Notification], hasMore: Bool)
    {
        let question = InboxQuestion.page(owner: owner, before: cursor, limit: limit + 1, includeSilent: includeSilent)
        guard case .notifications(let found) = try await ask(question, about: partitions(of: owner)) else { return ([], false) }
        return (Array(found.prefix(limit)), found.count > limit)
    }

    /// Marks one notification read, opened or deleted; false when the owner has no such notification.
    func mark(_ owner: Inbox.Owner, notificationID: String, _ mark: Inbox.Mark) async throws -> Bool {
        let question = InboxQuestion.mark(owner: owner, notificationID: notificationID, mark: mark)
        guard case .changed(let count) = try await ask(question, about: partitions(of: owner)) else { return false }
        return count > 0
    }

    /// Marks read what is not newer than `notificationID`; nil when the owner has no such notification.
    func markAllRead(_ owner: Inbox.Owner, until notificationID: String) async throws -> Int? {
        let numbers = partitions(of: owner)
        guard case .found(let until?) = try await ask(.find(owner: owner, notificationID: notificationID), about: numbers) else { return nil }
        guard case .changed(let count) = try await ask(.markAllRead(owner: owner, until: until), about: numbers) else { return 0 }
        return count
    }
}
