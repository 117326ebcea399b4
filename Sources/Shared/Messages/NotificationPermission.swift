/// An installation's notification permission, as the SDK reports it (batch-rules: `allowed`, `denied`,
/// `provisional`, `not_determined`).
package enum NotificationPermission {
    /// Permissions under which a push is displayed (provisional: quietly, in the notification centre). The
    /// orchestrator's `b.is_push_optin` and the notifier's push eligibility both read it.
    package static let displaying: Set<String> = ["allowed", "provisional"]
}
