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
        /// The recipient pressed one of the message's buttons (`action`: its id), or clicked an in-app message or a
        /// content card.
        case clicked
        /// An in-app message shown, a content card viewed (reported by the app).
        case viewed
        /// An in-app message or a content card dismissed by the recipient.
        case dismissed
        /// Webhook: an attempt that will be made again (its status and latency said), the target not finished.
        case retrying
        /// Webhook: kept, neither sent nor dropped, while its endpoint is disabled (it answered 410 Gone); sent when
        /// `herald webhook replay` enables it again.
        case parked

        /// What the recipient did with a message delivered (reported by the app, written by the orchestrator, which
        /// applied it then): nothing a consumer of delivery outcomes acts on.
        package var isEngagement: Bool { [.opened, .clicked, .viewed, .dismissed].contains(self) }
    }

    /// Where the report's message went: one of the channels sends go on, or one of the surfaces an app reads
    /// (in-app messages, content cards), whose engagement reports the orchestrator writes.
    package enum Channel: String, Codable, Sendable {
        case push, email, sms, webhook
        case inApp = "in_app"
        case contentCard = "content_card"

        package init(_ channel: MessageChannel) {
            switch channel {
            case .push: self = .push
            case .email: self = .email
            case .sms: self = .sms
            case .webhook: self = .webhook
            }
        }

        /// The channel sends go on; nil for the surfaces apps read.
        package var message: MessageChannel? { MessageChannel(rawValue: rawValue) }
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
    package var channel: Channel
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
    /// `clicked`: the id of the Push Story page tapped.
    package var page: String? = nil
    /// The send's experiment version and variant, copied from the send request (docs/measurement.md).
    package var experiment: String? = nil
    package var variant: String? = nil
    /// `opened`, `clicked`: made by a machine (a mail privacy proxy fetching every image, a link scanner), not the
    /// recipient (docs/measurement.md, "Machine opens and clicks").
    package var machine: Bool? = nil
    /// Webhook: the endpoint's HTTP status (absent when no answer came) and how long the attempt took.
    package var httpStatus: Int? = nil
    package var latencyMS: Int? = nil

    /// What the report counts as in an experiment's figures: its outcome, `_machine` appended for a machine's.
    package var figure: DeliveryFigure { DeliveryFigure(outcome, machine: machine == true) }

    enum CodingKeys: String, CodingKey {
        case id, project, channel, outcome, reason, token, address, at, campaign, provider, attempts, action, page, experiment, variant, machine
        case sendID = "send_id", targetID = "target_id", customID = "custom_id", installationID = "installation_id", profileKey = "profile_key"
        case providerMessageID = "provider_message_id", triggeredAt = "triggered_at", decidedAt = "decided_at"
        case httpStatus = "http_status", latencyMS = "latency_ms"
    }

    package init(
        id: String, sendID: String? = nil, project: String, customID: String?, installationID: String? = nil,
        channel: Channel, outcome: Outcome, reason: String? = nil, token: String? = nil, address: String? = nil,
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
