import Foundation

/// What one notifier instance asks another about the inbox in the partitions it owns (`PartitionPeers`, at
/// `InboxQuestion.path`): an installation's notifications sit in the partitions of every profile that held it.
enum InboxQuestion: Codable, Sendable {
    static let path = "/v1/peers/inbox"

    /// What the contact snapshots say of an installation: whether it opted out, and the users holding it.
    case installation(project: String, installationID: String)
    /// Up to `limit` of the owner's notifications older than `before`, newest first.
    case page(owner: Inbox.Owner, before: Inbox.Cursor?, limit: Int, includeSilent: Bool)
    /// Marks one notification; answered with how many were changed.
    case mark(owner: Inbox.Owner, notificationID: String, mark: Inbox.Mark)
    /// Where one of the owner's notifications is in the order (deleted or not).
    case find(owner: Inbox.Owner, notificationID: String)
    /// Marks read every notification of the owner not newer than `until`; answered with how many.
    case markAllRead(owner: Inbox.Owner, until: Inbox.Cursor)
}

/// The answer to an `InboxQuestion`, for some partitions; answers for several partitions, or from several instances,
/// add up (`combined`).
enum InboxAnswer: Codable, Sendable, Equatable {
    /// Opted out in any snapshot (nil: no snapshot holds the installation), and every user holding it.
    case installation(optedOut: Bool?, users: [String])
    /// Newest first.
    case notifications([Inbox.Notification])
    case found(Inbox.Cursor?)
    case changed(Int)

    /// The answers of several partitions or instances to `question` as one.
    static func combined(_ answers: [InboxAnswer], for question: InboxQuestion) -> InboxAnswer {
        switch question {
        case .installation:
            var optedOut: Bool?
            var users: [String] = []
            for case .installation(let opted, let held) in answers {
                if let opted { optedOut = (optedOut ?? false) || opted }
                users += held.filter { !users.contains($0) }
            }
            return .installation(optedOut: optedOut, users: users)
        case .page(_, _, let limit, _):
            var all: [Inbox.Notification] = []
            for case .notifications(let some) in answers { all += some }
            return .notifications(Array(all.sorted(by: Inbox.Notification.newerFirst).prefix(limit)))
        case .find:
            for case .found(let cursor?) in answers { return .found(cursor) }
            return .found(nil)
        case .mark, .markAllRead:
            var changed = 0
            for case .changed(let count) in answers { changed += count }
            return .changed(changed)
        }
    }
}
