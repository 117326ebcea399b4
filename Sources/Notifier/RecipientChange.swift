import Foundation
import Shared

/// A recipient's own change of subscription arriving over HTTP (an SMS reply, a one-click unsubscribe), for the
/// profile `key`, or for those of `phoneNumber` in `projects` (nil: any). An SMS reply names only a phone number, which
/// profiles in any partition may hold: one notifier instance asks the others to record it in theirs
/// (`PartitionPeers`, at `path`), and each answers with how many profiles it recorded it for.
struct RecipientChange: Codable, Sendable {
    static let path = "/v1/peers/recipient-change"

    var key: String?
    var phoneNumber: String?
    var projects: Set<String>?
    var channel: MessageChannel
    var outcome: DeliveryReport.Outcome
    var address: String?
    var reason: String
    var at: Date
}
