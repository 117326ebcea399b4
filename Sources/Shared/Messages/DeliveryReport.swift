import Foundation

/// What happened to a send, or feedback from a provider or a recipient (`herald.deliveries`, keyed by profile key).
/// The notifier writes them; the orchestrator applies the ones that change a profile (tokens, addresses, marketing
/// states, last push date).
package struct DeliveryReport: WireMessage {
    package static let kind = "delivery"
    package static let version = 1

    package enum Outcome: String, Codable, Sendable {
        case sent, failed, suppressed
        /// APNs 410 / BadDeviceToken, FCM UNREGISTERED: the token is dead.
        case tokenInvalid = "token_invalid"
        /// An email hard bounce: the address is dead.
        case bounced
        /// A recipient left marketing on the channel (SMS STOP, email one-click unsubscribe).
        case unsubscribed
        /// A recipient came back (SMS START).
        case subscribed
        /// The recipient opened the message (a notification tapped, reported by the app).
        case opened
        /// The recipient pressed one of the message's buttons (`action`: its id).
        case clicked
    }

    /// Unique per report: a replay of the id is a no-op.
    package var id: String
    package var sendID: String?
    /// The send's target the report is about (an installation id for push, the address otherwise): the notifier's
    /// ledger key with the send id. Absent on recipient feedback, and on reports written before it was a field (their
    /// id is `<send id>/<target id>/<outcome>`).
    package var targetID: String? = nil
    package var project: String
    package var customID: String?
    package var installationID: String?
    package var channel: MessageChannel
    package var outcome: Outcome
    package var reason: String?
    package var token: String?
    package var address: String?
    package var at: Date
    /// The profile the send was for (reports from the notifier carry it; the key falls back to the ids when absent).
    package var profileKey: String? = nil
    package var campaign: String? = nil
    /// Which provider answered (`apns`, `fcm`, `smtp`, `sms`), and its id for the message.
    package var provider: String? = nil
    package var providerMessageID: String? = nil
    /// Delivery attempts made (1 when the first one succeeded).
    package var attempts: Int? = nil
    /// Timing: when the trigger happened and when the send was decided (copied from the send request), so that a
    /// consumer measures trigger → provider answer without joining topics.
    package var triggeredAt: Date? = nil
    package var decidedAt: Date? = nil
    /// `clicked`: the id of the button pressed.
    package var action: String? = nil

    enum CodingKeys: String, CodingKey {
        case id, project, channel, outcome, reason, token, address, at, campaign, provider, attempts, action
        case sendID = "send_id", targetID = "target_id", customID = "custom_id", installationID = "installation_id", profileKey = "profile_key"
        case providerMessageID = "provider_message_id", triggeredAt = "triggered_at", decidedAt = "decided_at"
    }

    package init(
        id: String, sendID: String? = nil, project: String, customID: String?, installationID: String? = nil,
        channel: MessageChannel, outcome: Outcome, reason: String? = nil, token: String? = nil, address: String? = nil,
        at: Date
    ) {
        self.id = id
        self.sendID = sendID
        self.project = project
        self.customID = customID
        self.installationID = installationID
        self.channel = channel
        self.outcome = outcome
        self.reason = reason
        self.token = token
        self.address = address
        self.at = at
    }

    /// The profile key it is keyed by: the custom ID's profile, else the installation's anonymous profile.
    package var key: String {
        if let profileKey { return profileKey }
        return ProfileKey.of(project, customID: customID, installationID: installationID)
    }
}
