import Foundation

/// Why a target was not delivered, or is tried again: one value gives what the report and the ledger say (`text`) and
/// what labels the metrics (`label`: `herald_deliveries_total{reason}`, `herald_delivery_retries_total{reason}`). A
/// provider's own code (APNs' `reason`, FCM's `errorCode` or status) is kept as the provider gave it; a status without a
/// code of the provider's is its protocol and number (`HTTP 503` → `http_503`); everything else is one of Herald's.
enum DeliveryReason: Sendable, Equatable, CustomStringConvertible {
    /// Left out before any attempt: the contact, its consent, what the notifier learnt.
    case suppressed(Suppression)
    /// One of Herald's own, with what it knows more.
    case herald(Failure, detail: String? = nil)
    /// The provider's own code, with what Herald knows more when it found the problem itself before sending.
    case provider(String, detail: String? = nil)
    /// A protocol's status, with what it means when Herald knows.
    case status(Status, String, detail: String? = nil)

    /// Why a target is left out (`suppressed` in the report).
    enum Suppression: String, Sendable, CaseIterable {
        case noContact = "no_contact"
        case noInstallation = "no_installation"
        case noToken = "no_token"
        case noAddress = "no_address"
        case optedOut = "opted_out"
        case tokenInvalid = "token_invalid"
        case notificationsNotAllowed = "notifications_not_allowed"
        case unknownApp = "unknown_app"
        case bounced
        case notSubscribed = "not_subscribed"
        case unsubscribed
        /// The address or number is on the project's suppression list (docs/data-rights.md).
        case suppressedAddress = "suppressed_address"
        /// None of the send's targets is reachable, for no reason of its own.
        case unreachable
    }

    /// Herald's own reasons for a failure or a retry.
    enum Failure: String, Sendable, CaseIterable {
        /// The send's `expires_at` passed before it could be attempted.
        case expired
        /// Retried as often as the policy allows (the last reason is the detail).
        case maxRetryAttempts = "max_retry_attempts"
        case providerNotConfigured = "provider_not_configured"
        /// A ledger row the notifier cannot read back (its target's JSON).
        case unreadableLedgerRow = "unreadable_ledger_row"
        case noBundleID = "no_bundle_id"
        /// A provider token or an OAuth2 grant could not be signed.
        case signing
        /// Google's token endpoint refused the grant or failed.
        case oauth
        case payloadTooLarge = "payload_too_large"
        case bodyTooLong = "body_too_long"
        case invalidHeader = "invalid_header"
        case smtpAuth = "smtp_auth"
        /// Webhooks: the endpoint has no secret in `HERALD_APPS_FILE`, its URL's scheme is not allowed, or its address
        /// is not public (the address guard).
        case webhookSecretMissing = "webhook_secret_missing"
        case insecureURL = "insecure_url"
        case addressRefused = "address_refused"
        /// Webhooks: more redirects than followed (3), or one to a scheme not allowed.
        case redirectRefused = "redirect_refused"
        /// Webhooks: tried for the whole retry window without an answer that finished it.
        case retryWindowPassed = "retry_window_passed"
        /// Webhooks: parked, its endpoint disabled.
        case endpointDisabled = "endpoint_disabled"
        case smsAuth = "sms_auth"
        /// No answer within the provider's deadline.
        case timeout
        /// The transfer failed below HTTP or SMTP (refused, reset, TLS).
        case transport
    }

    /// The protocols whose status stands for a reason.
    enum Status: String, Sendable {
        case http = "HTTP"
        case smtp
        case sms
    }

    /// As the report and the ledger carry it: the code, then `: ` and the detail when there is one (`smtp 421`,
    /// `transport: Connection refused`, `max_retry_attempts: HTTP 500`).
    var text: String {
        let (code, detail): (String, String?) =
            switch self {
            case .suppressed(let suppression): (suppression.rawValue, nil)
            case .herald(let failure, let detail): (failure.rawValue, detail)
            case .provider(let code, let detail): (code, detail)
            case .status(let status, let code, let detail): ("\(status.rawValue) \(code)", detail)
            }
        return detail.map { "\(code): \($0)" } ?? code
    }

    var description: String { text }

    /// The metrics' label: Herald's code, the protocol and its status (`http_503`), or the provider's code up to its
    /// first character that is not a letter, a digit or `_`, at most 48 (a provider's answer cannot make a label
    /// anything else).
    var label: String {
        switch self {
        case .suppressed(let suppression): suppression.rawValue
        case .herald(let failure, _): failure.rawValue
        case .provider(let code, _): Self.labelPart(code)
        case .status(let status, let code, _): "\(status.rawValue.lowercased())_\(Self.labelPart(code))"
        }
    }

    private static func labelPart(_ text: String) -> String {
        var part = String.UnicodeScalarView()
        for scalar in text.unicodeScalars {
            let allowed = ("a"..."z").contains(scalar) || ("A"..."Z").contains(scalar) || ("0"..."9").contains(scalar) || scalar == "_"
            guard allowed, part.count < 48 else { break }
            part.append(scalar)
        }
        return String(part)
    }
}
