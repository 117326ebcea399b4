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
    /// Push: `ios` (APNs), `android` or `web` (FCM).
    var platform: String? = nil
    /// Push: `sandbox` or `production` (APNs host).
    var environment: String? = nil
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

/// A provider's answer, classified.
enum ProviderOutcome: Sendable, Equatable {
    /// Accepted; the provider's id for the message when it gives one.
    case accepted(messageID: String?)
    /// Worth trying again (rate limit, server error, timeout); `after` from `Retry-After` when the provider said.
    case retry(reason: String, after: Duration?)
    /// Never retried: the request itself is wrong, or the provider refuses it for good.
    case failed(reason: String)
    /// The target is dead: APNs 410 / BadDeviceToken, FCM UNREGISTERED, an email hard bounce, an invalid number.
    case targetInvalid(reason: String)
    /// The provider says the recipient opted out (an SMS provider's STOP list).
    case unsubscribed(reason: String)
}

/// A push, email or SMS provider.
protocol DeliveryProvider: Sendable {
    /// `apns`, `fcm`, `smtp`, `sms`.
    var name: String { get }
    /// Attempts in flight at most (HTTP/2 streams, SMTP connections, API calls).
    var maxInFlight: Int { get }
    func deliver(_ attempt: DeliveryAttempt) async -> ProviderOutcome
}

extension ProviderOutcome {
    /// A transfer that failed below HTTP (refused, reset, timed out): always worth another attempt.
    static func transport(_ error: TransferError) -> ProviderOutcome {
        .retry(reason: error.timedOut ? "timeout" : "transport: \(error.message)", after: nil)
    }

    /// The `Retry-After` header: seconds, or an HTTP date.
    static func retryAfter(_ value: String?, now: Date = Date()) -> Duration? {
        guard let value = value?.trimmingCharacters(in: .whitespaces), !value.isEmpty else { return nil }
        if let seconds = Int(value), seconds >= 0 { return .seconds(seconds) }
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss zzz"
        guard let date = formatter.date(from: value) else { return nil }
        return .seconds(max(0, Int(date.timeIntervalSince(now).rounded(.up))))
    }
}

/// base64url without padding (JWT).
extension SendRequest {
    /// A rendered field of the message; nil when absent or empty (an optional placeholder that rendered nothing).
    func field(_ name: String) -> String? { content[name].flatMap { $0.isEmpty ? nil : $0 } }
}

enum Base64URL {
    static func encode<Bytes: Sequence>(_ bytes: Bytes) -> String where Bytes.Element == UInt8 {
        Data(bytes).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    /// The bytes of a canonical encoding (as `encode` writes it), nil for anything else: the last character's unused
    /// bits must be zero, so that a token has one spelling and any changed character changes it (a changed unused bit
    /// used to decode to the same bytes, and an unsubscribe link so altered still verified).
    static func decode(_ text: String) -> [UInt8]? {
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while base64.count % 4 != 0 { base64 += "=" }
        guard let bytes = Data(base64Encoded: base64).map(Array.init), encode(bytes) == text else { return nil }
        return bytes
    }
}
