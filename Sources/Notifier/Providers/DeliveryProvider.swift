import Foundation
import Shared

/// A push, email or SMS provider.
protocol DeliveryProvider: Sendable {
    /// `apns`, `fcm`, `smtp`, `sms`.
    var name: String { get }
    /// Attempts in flight at most (HTTP/2 streams, SMTP connections, API calls).
    var maxInFlight: Int { get }
    func deliver(_ attempt: DeliveryAttempt) async -> ProviderOutcome
}

extension SendRequest {
    /// A rendered field of the message; nil when absent or empty (an optional placeholder that rendered nothing).
    func field(_ name: String) -> String? { content[name].flatMap { $0.isEmpty ? nil : $0 } }
}
