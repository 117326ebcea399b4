import Foundation
import Shared

/// A push, email, SMS or webhook provider.
protocol DeliveryProvider: Sendable {
    /// `apns`, `fcm`, `smtp`, `sms`, `webhook`.
    var name: String { get }
    /// Attempts in flight at most (HTTP/2 streams, SMTP connections, API calls).
    var maxInFlight: Int { get }
    func deliver(_ attempt: DeliveryAttempt) async -> ProviderOutcome
    /// The outcome with what the report says of the attempt (webhooks: the endpoint's HTTP status).
    func attempt(_ attempt: DeliveryAttempt, now: Date) async -> ProviderAnswer
}

extension DeliveryProvider {
    func attempt(_ attempt: DeliveryAttempt, now: Date) async -> ProviderAnswer { ProviderAnswer(outcome: await deliver(attempt)) }
}

/// A provider's answer to one attempt: its outcome, and the HTTP status when the report carries it (webhooks).
struct ProviderAnswer: Sendable, Equatable {
    var outcome: ProviderOutcome
    var httpStatus: Int? = nil
}

extension SendRequest {
    /// A rendered field of the message; nil when absent or empty (an optional placeholder that rendered nothing).
    func field(_ name: String) -> String? { content[name].flatMap { $0.isEmpty ? nil : $0 } }
}
