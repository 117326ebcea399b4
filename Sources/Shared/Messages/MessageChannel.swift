/// A delivery channel: the one enum the configuration, the send requests and the delivery reports share.
package enum MessageChannel: String, Sendable, CaseIterable, Codable {
    case push, email, sms
    /// A call to one of the project's own HTTP endpoints (`kind: webhook_endpoint`), signed per Standard Webhooks.
    case webhook

    /// The send topic of the channel (one per channel, so that a slow channel never holds another back).
    package var topic: HeraldTopic {
        switch self {
        case .push: .sendsPush
        case .email: .sendsEmail
        case .sms: .sendsSMS
        case .webhook: .sendsWebhook
        }
    }
}
