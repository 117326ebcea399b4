import CurlClient
import Foundation
import Shared

/// The notifier's configuration: the stateful service's settings, the apps catalog, and each provider (a provider
/// whose variables are unset is off; its sends fail as `provider_not_configured`).
struct NotifierSettings: Sendable {
    var service: StatefulServiceConfig
    var catalog: AppsCatalog
    var apns: APNs?
    var fcm: FCM?
    var smtp: SMTPProvider.Settings?
    var sms: SMSProvider.Settings?
    /// The notifier's address as recipients reach it (unsubscribe links, SMS webhook signatures).
    var publicURL: String
    /// Signs the unsubscribe links, and the tracked links and open pixels of emails (`HERALD_UNSUBSCRIBE_SECRET`).
    var unsubscribeSecret: String?
    /// `HERALD_EMAIL_TRACKING` (true): emails' opens and clicks tracked, unless their campaign says `tracking: false`.
    var emailTracking = true
    /// `HERALD_TRUSTED_PROXIES`: the proxies whose `X-Forwarded-For` names the client (tracked opens and clicks).
    var trustedProxies: [AddressRange] = []
    /// The token inbound SMS webhooks are signed with (the provider's auth token by default).
    var smsWebhookToken: String?
    var retry: RetryPolicy
    /// Webhooks: timeouts, limits in flight, and their own retry policy, which goes on for a window (72 h) rather than a
    /// count of attempts (docs/webhooks.md).
    var webhook = WebhookProvider.Settings()
    var webhookRetry = RetryPolicy(maxAttempts: .max, base: .seconds(10), cap: .seconds(6 * 3600), window: .seconds(72 * 3600))
    /// A PEM bundle trusted instead of the system's CAs for provider connections.
    var caFile: String?
    /// How long inbox entries are kept, and how often older ones are deleted.
    var inboxRetention: Duration = .seconds(90 * 86_400)
    var inboxPurgeInterval: Duration = .seconds(3600)
    /// How long a revoked partition waits for its provider calls in flight before it is released: at least the
    /// longest attempt of the configured providers (an SMTP transfer may take 30 s; a drain of 15 s released the
    /// partition while one was out, and the next owner sent it again).
    var drainTimeout: Duration = .seconds(35)
    /// The notifier's HTTP endpoints (inbox, unsubscribe, SMS webhook): requests handled at once
    /// (`HERALD_MAX_IN_FLIGHT_REQUESTS`, 256; beyond, 503 `overloaded`) and how long a body may take to arrive
    /// (`HERALD_HTTP_BODY_TIMEOUT_SECONDS`, 30), as the ingest's.
    var maxInFlightRequests = 256
    var bodyTimeout: Duration = .seconds(30)

    /// The longest one attempt of a configured provider may take (its timeouts): what a drain waits at least, and how
    /// long an attempt found `sending` at an opening is in doubt.
    var longestAttempt: Duration {
        var longest = Duration.zero
        if let apns { longest = max(longest, apns.settings.timeout) }
        if let fcm { longest = max(longest, FCMProvider.longestAttempt(sendTimeout: fcm.timeout)) }
        if let smtp { longest = max(longest, smtp.timeout) }
        if let sms { longest = max(longest, sms.timeout) }
        if webhooksConfigured { longest = max(longest, webhook.timeout) }
        return longest
    }

    /// Whether any project of the apps file has a webhook endpoint's secrets (without, no call can be made).
    var webhooksConfigured: Bool { catalog.projects.contains { !$0.webhooks.isEmpty } }

    /// How long a webhook endpoint's lane a claim took may stay unreturned before it lapses (`WebhookGate`): longer
    /// than any attempt may run.
    var webhookLaneLapse: Duration { max(.seconds(300), webhook.timeout * 4) }

    /// What is added to the longest attempt: its answer still has to be recorded and reported.
    static let attemptMargin: Duration = .seconds(5)

    struct APNs: Sendable {
        var keyPEM: String
        var keyID: String
        var teamID: String
        var settings: APNsProvider.Settings
        var tokenRefresh: Duration
    }

    struct FCM: Sendable {
        var account: ServiceAccount
        var url: String
        var maxInFlight: Int
        /// One send's deadline (the OAuth token's fetch has its own).
        var timeout: Duration
    }

    static func fromEnvironment(_ values: [String: String]) throws(ConfigError) -> NotifierSettings {
        var env = EnvironmentReader(values)
        let service = try StatefulServiceConfig.read(&env, service: "notifier", defaultPort: 8082)
        let catalog = try AppsCatalog.read(&env, hint: "JSON file of projects and apps, see config/apps.sample.json")
        // Provider calls carry credentials (a JWT, an OAuth token, basic auth) and messages: never over plain HTTP,
        // unless this says the providers are local simulators.
        let allowPlainHTTP = try env.bool("HERALD_ALLOW_PLAIN_HTTP", default: false)
        func secure(_ name: String, _ url: String) throws(ConfigError) -> String {
            guard allowPlainHTTP || !url.hasPrefix("http://") else {
                throw ConfigError(
                    name, "\(url): provider calls carry credentials; use https://, or set HERALD_ALLOW_PLAIN_HTTP=true for local simulators")
            }
            return url
        }

        var apns: APNs?
        let apnsKeyFile = env.optional("HERALD_APNS_KEY_FILE")
        if let apnsKeyFile {
            let keyPEM = try readFile(apnsKeyFile, variable: "HERALD_APNS_KEY_FILE")
            var settings = APNsProvider.Settings()
            settings.productionURL = try secure("HERALD_APNS_URL", try env.url("HERALD_APNS_URL", default: settings.productionURL))
            settings.sandboxURL = try secure("HERALD_APNS_SANDBOX_URL", try env.url("HERALD_APNS_SANDBOX_URL", default: settings.sandboxURL))
            settings.maxInFlight = try env.int("HERALD_APNS_MAX_STREAMS", default: 500, range: 1...5000)
            // An answer later than this is a timeout, and the push is attempted again (docs/notifier.md).
            settings.timeout = .seconds(try env.int("HERALD_APNS_TIMEOUT_SECONDS", default: 10, range: 1...120))
            let refresh = try env.int(
                "HERALD_APNS_TOKEN_REFRESH_MINUTES", default: 40,
                range: APNsTokenSigner.refreshRange.lowerBound / 60...APNsTokenSigner.refreshRange.upperBound / 60)
            apns = APNs(
                keyPEM: keyPEM,
                keyID: try env.required("HERALD_APNS_KEY_ID", hint: "the .p8 key's id, 10 characters"),
                teamID: try env.required("HERALD_APNS_TEAM_ID", hint: "the Apple developer team id"),
                settings: settings, tokenRefresh: .seconds(refresh * 60))
        }

        var fcm: FCM?
        if let accountFile = env.optional("HERALD_FCM_SERVICE_ACCOUNT_FILE") {
            let text = try readFile(accountFile, variable: "HERALD_FCM_SERVICE_ACCOUNT_FILE")
            var account: ServiceAccount
            do {
                account = try ServiceAccount.parse(Array(text.utf8))
            } catch {
                throw ConfigError("HERALD_FCM_SERVICE_ACCOUNT_FILE", "\(accountFile): \(error)")
            }
            let tokenURL = env.optional("HERALD_FCM_TOKEN_URL")
            if let tokenURL { account.tokenURI = tokenURL }
            _ = try secure(tokenURL == nil ? "HERALD_FCM_SERVICE_ACCOUNT_FILE" : "HERALD_FCM_TOKEN_URL", account.tokenURI)
            fcm = FCM(
                account: account, url: try secure("HERALD_FCM_URL", try env.url("HERALD_FCM_URL", default: "https://fcm.googleapis.com")),
                maxInFlight: try env.int("HERALD_FCM_MAX_IN_FLIGHT", default: 100, range: 1...5000),
                timeout: .seconds(try env.int("HERALD_FCM_TIMEOUT_SECONDS", default: 10, range: 1...120)))
        }

        var smtp: SMTPProvider.Settings?
        if let url = env.optional("HERALD_SMTP_URL") {
            guard url.hasPrefix("smtp://") || url.hasPrefix("smtps://") else {
                throw ConfigError("HERALD_SMTP_URL", "expected smtp://host:port or smtps://host:port, got \"\(url)\"")
            }
            var settings = SMTPProvider.Settings(
                url: url, from: try env.required("HERALD_EMAIL_FROM", hint: "the sender, e.g. Demo <news@example.com>"),
                user: env.optional("HERALD_SMTP_USER"), password: env.optional("HERALD_SMTP_PASSWORD"),
                startTLS: try env.oneOf("HERALD_SMTP_STARTTLS", default: SMTPRequest.StartTLS.required),
                connections: try env.int("HERALD_SMTP_CONNECTIONS", default: 4, range: 1...100))
            // The whole transfer: connection, TLS, the SMTP dialogue and the message.
            settings.timeout = .seconds(try env.int("HERALD_SMTP_TIMEOUT_SECONDS", default: 30, range: 1...300))
            // The name may be any text (encoded in the header); the address is ASCII, as SMTPUTF8 is not used.
            let sender = EmailMessage.mailboxParts(settings.from).address
            guard sender.contains("@"), sender.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
                throw ConfigError(
                    "HERALD_EMAIL_FROM", "expected an ASCII address, alone or as Name <local@domain>, got \"\(settings.from)\"")
            }
            // Credentials never cross an unencrypted connection, simulators or not.
            if settings.user != nil || settings.password != nil, url.hasPrefix("smtp://"), settings.startTLS != .required {
                throw ConfigError(
                    "HERALD_SMTP_STARTTLS",
                    "SMTP credentials are only sent over TLS: use smtps:// or HERALD_SMTP_STARTTLS=required (got \(settings.startTLS.rawValue))")
            }
            smtp = settings
        }

        var sms: SMSProvider.Settings?
        if let url = env.optional("HERALD_SMS_URL") {
            sms = SMSProvider.Settings(
                url: try secure("HERALD_SMS_URL", try env.url("HERALD_SMS_URL", default: url)),
                account: try env.required("HERALD_SMS_ACCOUNT", hint: "the SMS API's account id (basic auth user)"),
                token: try env.required("HERALD_SMS_TOKEN", hint: "the SMS API's auth token (basic auth password)"),
                from: try env.required("HERALD_SMS_FROM", hint: "the sending number, E.164"),
                maxInFlight: try env.int("HERALD_SMS_MAX_IN_FLIGHT", default: 10, range: 1...1000))
            sms?.timeout = .seconds(try env.int("HERALD_SMS_TIMEOUT_SECONDS", default: 10, range: 1...120))
        }

        // Unsubscribe links and the SMS webhook's signature name this address: a default of localhost would send every
        // recipient a link to their own machine and refuse every signed reply.
        if (smtp != nil || sms != nil) && env.optional("HERALD_PUBLIC_URL") == nil {
            throw ConfigError(
                "HERALD_PUBLIC_URL",
                "is required with HERALD_SMTP_URL or HERALD_SMS_URL: the notifier's address as recipients and the SMS provider reach it (unsubscribe links, SMS reply signatures)")
        }
        let publicURL = try env.url("HERALD_PUBLIC_URL", default: "http://localhost:\(service.common.httpPort)")
        let secret = env.optional("HERALD_UNSUBSCRIBE_SECRET")
        if let secret, secret.utf8.count < 16 {
            throw ConfigError("HERALD_UNSUBSCRIBE_SECRET", "at least 16 characters")
        }
        if smtp != nil && secret == nil {
            throw ConfigError("HERALD_UNSUBSCRIBE_SECRET", "is required with HERALD_SMTP_URL (it signs the unsubscribe links)")
        }
        var retry = RetryPolicy()
        retry.maxAttempts = try env.int("HERALD_MAX_ATTEMPTS", default: 5, range: 1...50)
        retry.base = .milliseconds(try env.int("HERALD_RETRY_BASE_MS", default: 1000, range: 1...3_600_000))
        retry.cap = .milliseconds(try env.int("HERALD_RETRY_MAX_MS", default: 600_000, range: 1...86_400_000))
        let webhookToken = env.optional("HERALD_SMS_WEBHOOK_TOKEN") ?? sms?.token
        let caFile = env.optional("HERALD_PROVIDER_CA_FILE")
        if let caFile { _ = try readFile(caFile, variable: "HERALD_PROVIDER_CA_FILE") }

        var result = NotifierSettings(
            service: service, catalog: catalog, apns: apns, fcm: fcm, smtp: smtp, sms: sms, publicURL: publicURL,
            unsubscribeSecret: secret, smsWebhookToken: webhookToken, retry: retry, caFile: caFile)
        result.inboxRetention = .seconds(try env.int("HERALD_INBOX_RETENTION_DAYS", default: 90, range: 1...3650) * 86_400)
        result.inboxPurgeInterval = .seconds(try env.int("HERALD_INBOX_PURGE_INTERVAL_SECONDS", default: 3600, range: 1...86_400))
        result.emailTracking = try env.bool("HERALD_EMAIL_TRACKING", default: true)
        result.trustedProxies = try env.trustedProxies()
        result.webhook.allowPlainHTTP = allowPlainHTTP
        result.webhook.timeout = .seconds(try env.int("HERALD_WEBHOOK_TIMEOUT_SECONDS", default: 15, range: 1...120))
        result.webhook.maxInFlight = try env.int("HERALD_WEBHOOK_MAX_IN_FLIGHT", default: 100, range: 1...5000)
        result.webhook.maxInFlightPerEndpoint = try env.int(
            "HERALD_WEBHOOK_MAX_IN_FLIGHT_PER_ENDPOINT", default: 10, range: 1...result.webhook.maxInFlight)
        result.webhookRetry.window = .seconds(try env.int("HERALD_WEBHOOK_RETRY_HOURS", default: 72, range: 1...720) * 3600)
        result.webhookRetry.base = .milliseconds(try env.int("HERALD_WEBHOOK_RETRY_BASE_MS", default: 10_000, range: 1...3_600_000))
        result.webhookRetry.cap = .milliseconds(try env.int("HERALD_WEBHOOK_RETRY_MAX_MS", default: 21_600_000, range: 1...86_400_000))
        result.maxInFlightRequests = try env.int("HERALD_MAX_IN_FLIGHT_REQUESTS", default: 256, range: 1...100_000)
        result.bodyTimeout = .seconds(try env.int("HERALD_HTTP_BODY_TIMEOUT_SECONDS", default: 30, range: 1...3600))
        let floor = result.longestAttempt
        let drainDefault = Int((floor + Self.attemptMargin).milliseconds)
        let drain = try env.int("HERALD_DRAIN_TIMEOUT_MS", default: drainDefault, range: 0...600_000)
        guard drain >= Int(floor.milliseconds) else {
            throw ConfigError(
                "HERALD_DRAIN_TIMEOUT_MS",
                "at least the longest provider attempt configured (\(floor.milliseconds) ms): a partition released while a call is out is sent again by its next owner; the default is \(drainDefault)")
        }
        result.drainTimeout = .milliseconds(drain)
        result.service.common.unknownVariables = env.unknownHeraldVariables
        return result
    }

    private static func readFile(_ path: String, variable: String) throws(ConfigError) -> String {
        guard let data = FileManager.default.contents(atPath: path) else { throw ConfigError(variable, "cannot read \(path)") }
        return String(decoding: data, as: UTF8.self)
    }

    /// `project/app` → bundle id of the iOS apps.
    var bundleIDs: [String: String] {
        var ids: [String: String] = [:]
        for project in catalog.projects {
            for app in project.apps { if let bundle = app.bundleID { ids["\(project.id)/\(app.id)"] = bundle } }
        }
        return ids
    }
}

extension EnvironmentReader {
    mutating func optional(_ name: String) -> String? {
        let value = string(name, default: "")
        return value.isEmpty ? nil : value
    }

    /// An http(s) URL without a trailing slash.
    mutating func url(_ name: String, default fallback: String) throws(ConfigError) -> String {
        var value = string(name, default: fallback)
        guard value.hasPrefix("http://") || value.hasPrefix("https://"), URL(string: value)?.host != nil else {
            throw ConfigError(name, "expected an http:// or https:// URL, got \"\(value)\"")
        }
        while value.hasSuffix("/") { value.removeLast() }
        return value
    }
}
