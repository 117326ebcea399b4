import Foundation

/// A webhook endpoint's state (`herald.webhooks`, compacted, key `<project>/<endpoint>`), read whole by every notifier
/// instance (docs/webhooks.md, "Disabled endpoints"). A notifier writes `disabled` when the endpoint answers 410 Gone:
/// from then on its messages are parked, never sent nor dropped. `herald webhook replay` writes `enabled`: every
/// instance then gives its partitions' parked messages back to the endpoint, oldest first.
package struct WebhookEndpointState: WireMessage {
    package static let kind = "webhook_endpoint_state"
    package static let version = 1

    package var project: String
    package var endpoint: String
    package var disabled: Bool
    /// Why: `gone` (the endpoint answered 410), `replay` (an operator's `herald webhook replay`).
    package var reason: String
    /// The send whose answer disabled it, when one did.
    package var sendID: String?
    /// Who wrote it: a notifier instance, or `herald` (the CLI).
    package var by: String
    package var at: Date

    package init(project: String, endpoint: String, disabled: Bool, reason: String, sendID: String? = nil, by: String, at: Date) {
        self.project = project
        self.endpoint = endpoint
        self.disabled = disabled
        self.reason = reason
        self.sendID = sendID
        self.by = by
        self.at = at
    }

    package var key: String { "\(project)/\(endpoint)" }

    enum CodingKeys: String, CodingKey {
        case project, endpoint, disabled, reason, by, at
        case sendID = "send_id"
    }
}
