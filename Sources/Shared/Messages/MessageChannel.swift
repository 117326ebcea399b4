/// A delivery channel: the one enum the configuration, the send requests and the delivery reports share.
package enum MessageChannel: String, Sendable, CaseIterable, Codable {
    case push, email, sms

    /// The send topic of the channel (one per channel, so that a slow channel never holds another back).
    package var topic: HeraldTopic {
        switch self {
        case .push: .sendsPush
        case .email: .sendsEmail
        case .sms: .sendsSMS
        }
    }
}
