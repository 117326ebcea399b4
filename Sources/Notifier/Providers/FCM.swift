@preconcurrency import Crypto
import CurlClient
import Foundation
import Shared
@preconcurrency import _CryptoExtras

/// A Google service account key (the JSON file Firebase gives): what the OAuth2 JWT grant needs.
struct ServiceAccount: Sendable {
    var projectID: String
    var clientEmail: String
    var privateKeyID: String?
    var tokenURI: String
    var key: _RSA.Signing.PrivateKey

    struct Problem: Error, CustomStringConvertible { var description: String }

    static func parse(_ bytes: [UInt8]) throws -> ServiceAccount {
        guard let json = try? JSONParser.parse(bytes) else { throw Problem(description: "not JSON") }
        func field(_ name: String) throws -> String {
            guard let value = json[name]?.stringValue, !value.isEmpty else { throw Problem(description: "\(name) is missing") }
            return value
        }
        let pem = try field("private_key")
        let key: _RSA.Signing.PrivateKey
        do {
            key = try _RSA.Signing.PrivateKey(pemRepresentation: pem)
        } catch {
            throw Problem(description: "private_key is not an RSA private key in PEM: \(error)")
        }
        return ServiceAccount(
            projectID: try field("project_id"), clientEmail: try field("client_email"),
            privateKeyID: json["private_key_id"]?.stringValue, tokenURI: try field("token_uri"), key: key)
    }

    /// The signed JWT of the grant (RS256), valid for an hour.
    func assertion(now: Date, scope: String) throws -> String {
        var header = [JSONMember("alg", .string("RS256")), JSONMember("typ", .string("JWT"))]
        if let privateKeyID { header.append(JSONMember("kid", .string(privateKeyID))) }
        let issued = Int(now.timeIntervalSince1970)
        let claims = JSONValue.object([
            JSONMember("iss", .string(clientEmail)), JSONMember("scope", .string(scope)),
            JSONMember("aud", .string(tokenURI)), JSONMember("iat", .number(String(issued))),
            JSONMember("exp", .number(String(issued + 3600))),
        ])
        let input = Base64URL.encode(JSONValue.object(header).serialized) + "." + Base64URL.encode(claims.serialized)
        let signature = try key.signature(for: Array(input.utf8), padding: .insecurePKCS1v1_5)
        return input + "." + Base64URL.encode(signature.rawRepresentation)
    }
}

/// OAuth2 access tokens for FCM from the JWT grant, cached until five minutes before they expire; one request at a
/// time however many sends wait for it.
actor AccessTokens {
    static let scope = "https://www.googleapis.com/auth/firebase.messaging"
    let account: ServiceAccount
    let driver: CurlDriver
    private var current: (token: String, expires: Date)?
    private var inFlight: Task<Result<String, TokenError>, Never>?

    struct TokenError: Error, Sendable { var outcome: ProviderOutcome }

    init(account: ServiceAccount, driver: CurlDriver) {
        self.account = account
        self.driver = driver
    }

    func token() async -> Result<String, TokenError> {
        if let current, current.expires > Date() { return .success(current.token) }
        if let inFlight { return await inFlight.value }
        let task = Task { await self.fetch() }
        inFlight = task
        let result = await task.value
        inFlight = nil
        return result
    }

    /// FCM answered 401: the token is dropped and the next send fetches another.
    func invalidate(_ token: String) {
        if current?.token == token { current = nil }
    }

    private func fetch() async -> Result<String, TokenError> {
        let assertion: String
        do {
            assertion = try account.assertion(now: Date(), scope: Self.scope)
        } catch {
            return .failure(TokenError(outcome: .failed(reason: .herald(.signing, detail: "the OAuth2 grant: \(error)"))))
        }
        let request = HTTPRequest(
            url: account.tokenURI, headers: [("content-type", "application/x-www-form-urlencoded")],
            body: FormEncoding.encode([("grant_type", "urn:ietf:params:oauth:grant-type:jwt-bearer"), ("assertion", assertion)]))
        switch await driver.perform(request) {
        case .failure(let error):
            return .failure(TokenError(outcome: .transport(error)))
        case .success(let response):
            let json = try? JSONParser.parse(response.body)
            guard response.status == 200, let token = json?["access_token"]?.stringValue else {
                let detail = json?["error"]?.stringValue ?? "HTTP \(response.status)"
                // A refused grant (invalid_grant: wrong key, disabled account) is a configuration problem; a server
                // error is worth another try.
                return .failure(TokenError(outcome: response.status >= 500 || response.status == 429
                    ? .retry(reason: .herald(.oauth, detail: detail), after: ProviderOutcome.retryAfter(response.header("retry-after")))
                    : .failed(reason: .herald(.oauth, detail: detail))))
            }
            var lifetime = 3600.0
            if case .number(let text)? = json?["expires_in"], let seconds = Double(text) { lifetime = seconds }
            current = (token, Date().addingTimeInterval(max(60, lifetime - 300)))
            return .success(token)
        }
    }
}

/// Firebase Cloud Messaging, HTTP v1 API.
struct FCMProvider: DeliveryProvider {
    let name = "fcm"
    let driver: CurlDriver
    let tokens: AccessTokens
    /// `https://fcm.googleapis.com` (or the simulator).
    let baseURL: String
    let maxInFlight: Int
    var timeout: Duration = HTTPRequest.defaultTimeout

    /// The longest one attempt may take: an OAuth token fetched first (its request's timeout), then the send's.
    static func longestAttempt(sendTimeout: Duration) -> Duration { HTTPRequest.defaultTimeout + sendTimeout }

    func deliver(_ attempt: DeliveryAttempt) async -> ProviderOutcome {
        let accessToken: String
        switch await tokens.token() {
        case .failure(let error): return error.outcome
        case .success(let token): accessToken = token
        }
        let message = Self.messageMembers(attempt)
        if let problem = Self.sizeProblem(message) { return .failed(reason: problem) }
        let request = HTTPRequest(
            url: "\(baseURL)/v1/projects/\(tokens.account.projectID)/messages:send",
            headers: [("authorization", "Bearer \(accessToken)"), ("content-type", "application/json")],
            body: JSONValue.object([JSONMember("message", .object(message))]).serialized, timeout: timeout)
        switch await driver.perform(request) {
        case .failure(let error):
            return .transport(error)
        case .success(let response):
            let outcome = Self.outcome(status: response.status, body: response.body, headers: response.headers)
            if response.status == 401 { await tokens.invalidate(accessToken) }
            return outcome
        }
    }

    /// The v1 message: notification (title, body, image; none for a background push), data (Herald's keys and the
    /// custom payload, all strings), Android options (priority, TTL until expiry or the template's `ttl`, collapse key,
    /// and the notification's channel, tag, click action and badge count).
    static func message(_ attempt: DeliveryAttempt, now: Date = Date()) -> [UInt8] {
        JSONValue.object([JSONMember("message", .object(messageMembers(attempt, now: now)))]).serialized
    }

    /// What a device receives of a message, as FCM counts it against its 4,096 bytes: the notification, the data and
    /// the Android notification (not the token nor the delivery options), measured as their JSON.
    static func deviceBytes(_ message: [JSONMember]) -> Int {
        var received = message.filter { ["notification", "data"].contains($0.key) }
        if case .object(let android)? = message.first(where: { $0.key == "android" })?.value,
            let shown = android.first(where: { $0.key == "notification" })
        {
            received.append(shown)
        }
        return JSONValue.object(received).serialized.count
    }

    /// `payload_too_large` when what reaches the device is over the 4,096 bytes FCM takes: failed here, clearly, rather
    /// than sent and reported `sent`.
    static func sizeProblem(_ message: [JSONMember]) -> DeliveryReason? {
        let size = deviceBytes(message)
        guard size > PushPayloadRules.maxBytes else { return nil }
        return .herald(.payloadTooLarge, detail: "\(size) bytes, FCM takes \(PushPayloadRules.maxBytes)")
    }

    static func messageMembers(_ attempt: DeliveryAttempt, now: Date = Date()) -> [JSONMember] {
        let send = attempt.request
        let text = send.field
        // A background push, or one that only sets the badge, is a data message: no notification to show.
        let background = APNsProvider.isBackground(send) || APNsProvider.isBadgeOnly(send)
        var notification: [JSONMember] = []
        for (field, key) in [("title", "title"), ("body", "body"), ("image_url", "image")] where !background {
            if let text = text(field) { notification.append(JSONMember(key, .string(text))) }
        }
        var data = [
            JSONMember("herald_send_id", .string(send.sendID)), JSONMember("herald_campaign", .string(send.campaign)),
            JSONMember("herald_source", .string(APNsProvider.sourceType(send))),
        ]
        if let link = text("deeplink") { data.append(JSONMember("herald_deeplink", .string(link))) }
        if let landing = send.landing { data.append(JSONMember("herald_landing", .string(landing))) }
        // Android has no silent badge: the app sets its launcher's count from the data.
        if APNsProvider.isBadgeOnly(send), let badge = attempt.target.badge ?? APNsProvider.templateBadge(send) {
            data.append(JSONMember("herald_badge", .string(String(badge))))
        }
        if let image = text("image_url"), let type = PushOptions.attachmentType(url: image, declared: text("attachment_type")) {
            data.append(JSONMember("herald_attachment_type", .string(type)))
        }
        if PushStory.isStory(send.content) { data += PushStoryPayload.fcmData(send.content) }
        if let app = attempt.target.app, let actions = send.actions?[app], !background {
            data.append(JSONMember("herald_actions", .string(String(decoding: JSONValue.array(actions.map(\.json)).serialized, as: UTF8.self))))
        }
        // FCM's data values are strings: the others go as their JSON text.
        for (key, value) in (send.payload ?? [:]).sorted(by: { $0.key < $1.key }) where !key.hasPrefix("herald_") {
            data.append(JSONMember(key, .string(value.stringValue ?? String(decoding: value.serialized, as: UTF8.self))))
        }
        var android = [JSONMember("priority", .string(APNsProvider.isHighPriority(send) ? "HIGH" : "NORMAL"))]
        let expiry = APNsProvider.expiration(send, default: PushOptions.maxTTL)
        let ttl = max(0, Int(expiry.timeIntervalSince(max(now, send.notBefore ?? now))))
        android.append(JSONMember("ttl", .string("\(min(ttl, Int(PushOptions.maxTTL)))s")))
        if let collapse = text("collapse_id") { android.append(JSONMember("collapse_key", .string(collapse))) }
        if !background {
            // Without a tag of its own, the send's id: an attempt repeated after a crash replaces the first on the
            // device instead of showing twice.
            var shown = [JSONMember("tag", .string(text("tag") ?? send.sendID))]
            if let channel = text("channel_id") { shown.append(JSONMember("channel_id", .string(channel))) }
            if let action = text("click_action") { shown.append(JSONMember("click_action", .string(action))) }
            // Android's badge: the number on the launcher icon where the launcher shows one.
            if let badge = attempt.target.badge ?? APNsProvider.templateBadge(send) {
                shown.append(JSONMember("notification_count", .number(String(badge))))
            }
            android.append(JSONMember("notification", .object(shown)))
        }
        var message = [JSONMember("token", .string(attempt.target.address))]
        if !notification.isEmpty { message.append(JSONMember("notification", .object(notification))) }
        message.append(JSONMember("data", .object(data)))
        message.append(JSONMember("android", .object(android)))
        return message
    }

    /// FCM's answer, classified by its `FcmError` code (or the status when there is none).
    static func outcome(status: Int, body: [UInt8], headers: [String: String]) -> ProviderOutcome {
        let json = try? JSONParser.parse(body)
        if status == 200 { return .accepted(messageID: json?["name"]?.stringValue) }
        var code = json?["error"]?["status"]?.stringValue
        if case .array(let details)? = json?["error"]?["details"] {
            for detail in details { if let errorCode = detail["errorCode"]?.stringValue { code = errorCode } }
        }
        let reason = code.map { DeliveryReason.provider($0) } ?? .status(.http, String(status))
        switch code ?? "" {
        case "UNREGISTERED":
            return .targetInvalid(reason: reason)
        case "QUOTA_EXCEEDED", "UNAVAILABLE", "INTERNAL", "RESOURCE_EXHAUSTED":
            return .retry(reason: reason, after: ProviderOutcome.retryAfter(headers["retry-after"]))
        case "UNAUTHENTICATED":
            // The access token was refused (expired early, revoked): the next attempt fetches a new one.
            return .retry(reason: reason, after: nil)
        default:
            if status == 429 || status >= 500 {
                return .retry(reason: reason, after: ProviderOutcome.retryAfter(headers["retry-after"]))
            }
            // INVALID_ARGUMENT, SENDER_ID_MISMATCH, THIRD_PARTY_AUTH_ERROR, PERMISSION_DENIED…
            return .failed(reason: reason)
        }
    }
}
