import CurlClient
import Foundation
import Shared

/// A provider's answer, classified.
enum ProviderOutcome: Sendable, Equatable {
    /// Accepted; the provider's id for the message when it gives one.
    case accepted(messageID: String?)
    /// Worth trying again (rate limit, server error, timeout); `after` from `Retry-After` when the provider said.
    case retry(reason: DeliveryReason, after: Duration?)
    /// Never retried: the request itself is wrong, or the provider refuses it for good.
    case failed(reason: DeliveryReason)
    /// The target is dead: APNs 410 / BadDeviceToken, FCM UNREGISTERED, an email hard bounce, an invalid number.
    case targetInvalid(reason: DeliveryReason)
    /// The provider says the recipient opted out (an SMS provider's STOP list).
    case unsubscribed(reason: DeliveryReason)
    /// A webhook endpoint answered 410 Gone: the message is parked and the endpoint disabled until a replay.
    case endpointGone(reason: DeliveryReason)
}

extension ProviderOutcome {
    /// A transfer that failed below HTTP (refused, reset, timed out): always worth another attempt.
    static func transport(_ error: TransferError) -> ProviderOutcome {
        .retry(reason: error.timedOut ? .herald(.timeout) : .herald(.transport, detail: error.message), after: nil)
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
        // A provider's date may be any year: past a day's wait it is as good as a day (the retry policy caps it lower).
        return .seconds(min(max(0, date.timeIntervalSince(now).rounded(.up)), 86_400))
    }
}
