import Foundation
import Shared

/// Where one message of a send goes: an installation's token, an email address, a phone number.
struct DeliveryTarget: Sendable, Equatable, Codable {
    /// The ledger's name for the target within the send: the installation id for push, the address otherwise.
    var id: String
    /// The token, the email address or the phone number.
    var address: String
    var installationID: String? = nil
    var app: String? = nil
    /// Push: the app's platform (APNs for iOS, FCM for Android and web).
    var platform: Platform? = nil
    /// Push: the APNs host (production when nil).
    var environment: PushEnvironment? = nil
    /// Push: the badge this target shows, decided once when the send was fanned out (`Badges`), so that an attempt
    /// repeated after a crash shows the same number.
    var badge: Int? = nil

    enum CodingKeys: String, CodingKey {
        case id, address, app, platform, environment, badge
        case installationID = "installation_id"
    }
}

/// One attempt to deliver a send to one target.
struct DeliveryAttempt: Sendable {
    var request: SendRequest
    var target: DeliveryTarget
    /// 1 for the first attempt.
    var attempt: Int
}
