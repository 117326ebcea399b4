@preconcurrency import Crypto
import CurlClient
import Foundation
import Shared
import Synchronization

/// APNs token authentication: an ES256 JWT signed with the team's .p8 key, reused between requests and replaced after
/// `refreshAfter` (Apple refuses tokens older than an hour and new tokens more often than every 20 minutes).
final class APNsTokenSigner: Sendable {
    let keyID: String
    let teamID: String
    private let key: P256.Signing.PrivateKey
    let refreshAfter: Duration
    private let current = Mutex<(token: String, issuedAt: Date)?>(nil)

    /// Tokens are refreshed between 20 and 60 minutes old.
    static let refreshRange: ClosedRange<Int> = 20 * 60...59 * 60

    init(p8 pem: String, keyID: String, teamID: String, refreshAfter: Duration = .seconds(40 * 60)) throws {
        self.key = try P256.Signing.PrivateKey(pemRepresentation: pem)
        self.keyID = keyID
        self.teamID = teamID
        self.refreshAfter = refreshAfter
    }

    /// The token to send now: the cached one while younger than `refreshAfter`, else a new one.
    func token(now: Date = Date()) throws -> String {
        try current.withLock { current in
            if let current, now.timeIntervalSince(current.issuedAt) < refreshAfter.timeInterval,
                now >= current.issuedAt
            {
                return current.token
            }
            let token = try sign(issuedAt: now)
            current = (token, now)
            return token
        }
    }

    /// APNs said the token expired (`ExpiredProviderToken`): the next request signs a new one, unless a newer one is
    /// in use already.
    func expire(_ token: String) {
        current.withLock { current in
            if current?.token == token { current = nil }
        }
    }

    func sign(issuedAt: Date) throws -> String {
        let header = JSONValue.object([JSONMember("alg", .string("ES256")), JSONMember("kid", .string(keyID))])
        let claims = JSONValue.object([
            JSONMember("iss", .string(teamID)), JSONMember("iat", .number(String(Int(issuedAt.timeIntervalSince1970)))),
        ])
        let input = Base64URL.encode(header.serialized) + "." + Base64URL.encode(claims.serialized)
        let signature = try key.signature(for: Array(input.utf8))
        return input + "." + Base64URL.encode(signature.rawRepresentation)
    }
}

/// Apple Push Notification service over HTTP/2 with token authentication.
struct APNsProvider: DeliveryProvider {
    struct Settings: Sendable {
        var productionURL = "https://api.push.apple.com"
        var sandboxURL = "https://api.sandbox.push.apple.com"
        /// Expiration when the send has none: 30 days.
        var defaultExpiration: Duration = .seconds(30 * 86_400)
        var timeout: Duration = .seconds(10)
        var maxInFlight = 500
    }

    let name = "apns"
    let driver: CurlDriver
    let signer: APNsTokenSigner
    let settings: Settings
    /// App id → bundle id (`apns-topic`).
    let bundleIDs: [String: String]
    var maxInFlight: Int { settings.maxInFlight }

    static let maxPayloadBytes = PushPayloadRules.maxBytes

    func deliver(_ attempt: DeliveryAttempt) async -> ProviderOutcome {
        guard let app = attempt.target.app, let topic = bundleIDs["\(attempt.request.project)/\(app)"] else {
            return .failed(reason: .herald(.noBundleID, detail: "no bundle id configured for app \(attempt.target.app ?? "?") (apps file: bundle_id)"))
        }
        let request: HTTPRequest
        let token: String
        do {
            token = try signer.token()
            request = try Self.request(attempt, topic: topic, jwt: token, settings: settings)
        } catch let problem as APNsRequestProblem {
            return .failed(reason: problem.reason)
        } catch {
            return .failed(reason: .herald(.signing, detail: "the provider token: \(error)"))
        }
        switch await driver.perform(request) {
        case .failure(let error):
            return .transport(error)
        case .success(let response):
            let outcome = Self.outcome(status: response.status, body: response.body, headers: response.headers)
            if case .retry(.provider("ExpiredProviderToken", _), _) = outcome { signer.expire(token) }
            return outcome
        }
    }

    struct APNsRequestProblem: Error { var reason: DeliveryReason }

    /// The HTTP/2 request for an attempt: `POST /3/device/<token>` on the token environment's host.
    static func request(_ attempt: DeliveryAttempt, topic: String, jwt: String, settings: Settings) throws -> HTTPRequest {
        let send = attempt.request
        let payload = self.payload(send, app: attempt.target.app, badge: attempt.target.badge)
        guard payload.count <= maxPayloadBytes else {
            throw APNsRequestProblem(reason: .herald(.payloadTooLarge, detail: "\(payload.count) bytes, APNs takes \(maxPayloadBytes)"))
        }
        let host = attempt.target.environment == .sandbox ? settings.sandboxURL : settings.productionURL
        let background = isBackground(send)
        var headers: [(String, String)] = [
            ("authorization", "bearer \(jwt)"),
            ("apns-topic", topic),
            ("apns-push-type", background ? "background" : "alert"),
            ("apns-priority", isHighPriority(send) ? "10" : "5"),
            ("apns-expiration", expirationHeader(send, default: settings.defaultExpiration.timeInterval)),
            ("apns-id", messageID(sendID: send.sendID, target: attempt.target.id)),
            ("content-type", "application/json"),
        ]
        // Without a collapse id of its own, the send's: an attempt repeated after a crash (Herald is at least once)
        // replaces the first on the device instead of showing twice.
        let collapse = send.field("collapse_id") ?? send.sendID
        guard collapse.utf8.count <= 64 else {
            throw APNsRequestProblem(reason: .provider("BadCollapseId", detail: "collapse_id is \(collapse.utf8.count) bytes, at most 64"))
        }
        // A header value: a line break or another control character would end it and start another header.
        guard !collapse.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else {
            throw APNsRequestProblem(reason: .provider("BadCollapseId", detail: "collapse_id holds a control character (a line break?)"))
        }
        headers.append(("apns-collapse-id", collapse))
        return HTTPRequest(
            method: "POST", url: "\(host)/3/device/\(attempt.target.address)", headers: headers, body: payload,
            timeout: settings.timeout, http2: true)
    }

    /// A background push (`content-available` only): the template's `push_type`, else one with no body and no title
    /// to show (sends from before `push_type`).
    static func isBackground(_ send: SendRequest) -> Bool {
        // A story is always one: the app's SDK posts its notification once the images are in (`PushStoryPayload`).
        if PushStory.isStory(send.content) { return true }
        return switch send.content["push_type"] {
        case "background": true
        case "alert": false
        default: (send.content["body"] ?? "").isEmpty && (send.content["title"] ?? "").isEmpty && send.field("badge") == nil
        }
    }

    /// A push that only sets the app icon's badge: a badge, no title, subtitle or body, not `push_type: background`.
    /// APNs takes it as an alert push whose `aps` holds the badge alone, which iOS applies without showing anything
    /// (Apple's way to clear a badge: `0`); a background push may not carry a badge. FCM gets a data message.
    static func isBadgeOnly(_ send: SendRequest) -> Bool {
        send.content["push_type"] != "background" && send.field("badge") != nil
            && ["title", "subtitle", "body"].allSatisfy { (send.content[$0] ?? "").isEmpty }
    }

    /// `apns-expiration`: 0 for a `ttl` of 0 (deliver now or never: APNs does not store it), else when it expires.
    static func expirationHeader(_ send: SendRequest, default fallback: TimeInterval) -> String {
        if send.content["ttl"].flatMap(PushOptions.seconds) == 0 { return "0" }
        return String(Int(expiration(send, default: fallback).timeIntervalSince1970))
    }

    /// The template's `priority`, else high for an alert and normal for a background push.
    static func isHighPriority(_ send: SendRequest) -> Bool {
        send.field("priority").map { $0 == "high" } ?? !isBackground(send)
    }

    /// When the notification stops being worth delivering: the send's expiry, else the provider's default from when
    /// the send may leave; sooner if the template sets a `ttl`.
    static func expiration(_ send: SendRequest, default fallback: TimeInterval) -> Date {
        let start = send.notBefore ?? send.decidedAt
        let expiration = send.expiresAt ?? start.addingTimeInterval(fallback)
        guard let ttl = send.content["ttl"].flatMap(PushOptions.seconds) else { return expiration }
        return min(expiration, start.addingTimeInterval(ttl))
    }

    /// `aps` (alert, badge, sound, category, thread, interruption level, relevance, target content, mutable-content for
    /// an attachment), Herald's own key, and the custom payload at the root. `badge`: the number the target was given
    /// (`Badges`), else the template's own number.
    static func payload(_ send: SendRequest, app: String? = nil, badge: Int? = nil) -> [UInt8] {
        if PushStory.isStory(send.content) {
            // Braze's Push Story layout, the badge and sound in its fallback alert.
            var members = PushStoryPayload.apnsMembers(send.content, badge: badge ?? templateBadge(send))
            members.append(JSONMember(heraldKey, heraldMembers(send, app: app)))
            return appendingCustomPayload(members, send)
        }
        var aps: [JSONMember] = []
        let text = send.field
        if isBackground(send) {
            aps.append(JSONMember("content-available", .number("1")))
        } else {
            var alert: [JSONMember] = []
            for field in ["title", "subtitle", "body"] {
                if let text = text(field) { alert.append(JSONMember(field, .string(text))) }
            }
            // None for a push that only sets the badge.
            if !alert.isEmpty { aps.append(JSONMember("alert", .object(alert))) }
            // `badge` and `relevance_score` were checked when the configuration was read.
            if let badge = badge ?? templateBadge(send) { aps.append(JSONMember("badge", .number(String(badge)))) }
            if text("interruption_level") == "critical" {
                // A critical alert plays its sound only from a dictionary that says so (Apple's "sound" key).
                let sound: [JSONMember] = [
                    JSONMember("critical", .number("1")), JSONMember("name", .string(text("sound") ?? "default")),
                    JSONMember("volume", .number("1")),
                ]
                aps.append(JSONMember("sound", .object(sound)))
            } else if let sound = text("sound") {
                aps.append(JSONMember("sound", .string(sound)))
            }
            for (field, key) in [("category", "category"), ("thread_id", "thread-id"), ("interruption_level", "interruption-level")] {
                if let text = text(field) { aps.append(JSONMember(key, .string(text))) }
            }
            if let score = text("relevance_score"), Double(score) != nil { aps.append(JSONMember("relevance-score", .number(score))) }
            if let target = text("target_content_id") { aps.append(JSONMember("target-content-id", .string(target))) }
            if text("image_url") != nil { aps.append(JSONMember("mutable-content", .number("1"))) }
        }
        return appendingCustomPayload([JSONMember("aps", .object(aps)), JSONMember(heraldKey, heraldMembers(send, app: app))], send)
    }

    /// The notification: `members`, then the custom payload's keys at the root (none of the keys already there).
    static func appendingCustomPayload(_ members: [JSONMember], _ send: SendRequest) -> [UInt8] {
        var members = members
        let taken = Set(members.map(\.key))
        for (key, value) in (send.payload ?? [:]).sorted(by: { $0.key < $1.key }) where !taken.contains(key) {
            members.append(JSONMember(key, value))
        }
        return JSONValue.object(members).serialized
    }

    /// The template's badge when it is a number (`+1` needs the installation's count: `Badges`).
    static func templateBadge(_ send: SendRequest) -> Int? {
        if case .set(let number)? = send.field("badge").flatMap(PushOptions.badge) { number } else { nil }
    }

    /// The key of Herald's own data in a notification (the app's SDK reads it).
    static let heraldKey = "com.herald"

    /// `i` send id, `c` campaign, `t` source (`c` campaign, `t` transactional, `tc` trigger), `l` deeplink, `ld` the
    /// in-app message to show when it is opened (a landing), `at` the attachment (`u` its URL, `t` its type), `a` the
    /// buttons of the notification's category for the target's app (`PushAction`).
    static func heraldMembers(_ send: SendRequest, app: String? = nil) -> JSONValue {
        var members = [
            JSONMember("i", .string(send.sendID)), JSONMember("c", .string(send.campaign)),
            JSONMember("t", .string(sourceType(send))),
        ]
        if let link = send.field("deeplink") { members.append(JSONMember("l", .string(link))) }
        if let landing = send.landing { members.append(JSONMember("ld", .string(landing))) }
        if let image = send.field("image_url") {
            // The attachment and its type (Braze's `ab.att`), which a notification service extension downloads.
            var attachment = [JSONMember("u", .string(image))]
            if let type = PushOptions.attachmentType(url: image, declared: send.field("attachment_type")) {
                attachment.append(JSONMember("t", .string(type)))
            }
            members.append(JSONMember("at", .object(attachment)))
        }
        if let app, let actions = send.actions?[app], !isBackground(send) {
            members.append(JSONMember("a", .array(actions.map(\.json))))
        }
        return .object(members)
    }

    static func sourceType(_ send: SendRequest) -> String {
        switch send.trigger.type {
        case .api: "t"
        case .schedule: "c"
        case .event, .segmentEntry, .segmentExit, .sessionStart, .pushOpen, .uninstallTracking, .geofenceSync, .preview, .inApp, .card: "tc"
        }
    }

    /// `apns-id`: a UUID derived from the send and the target, so that a repeated attempt carries the same id.
    static func messageID(sendID: String, target: String) -> String {
        let digest = Array(SHA256.hash(data: Array("\(sendID)\u{0}\(target)".utf8)).prefix(16))
        let hex = digest.hexString
        let parts = [hex.prefix(8), hex.dropFirst(8).prefix(4), hex.dropFirst(12).prefix(4), hex.dropFirst(16).prefix(4), hex.dropFirst(20)]
        return parts.joined(separator: "-")
    }

    /// APNs' answer, classified (Apple's "Handling notification responses from APNs" table).
    static func outcome(status: Int, body: [UInt8], headers: [String: String]) -> ProviderOutcome {
        if status == 200 { return .accepted(messageID: headers["apns-id"]) }
        let code = (try? JSONParser.parse(body))?["reason"]?.stringValue
        let reason = code.map { DeliveryReason.provider($0) } ?? .status(.http, String(status))
        switch (status, code ?? "") {
        case (410, _), (400, "BadDeviceToken"):
            // Unregistered / ExpiredToken (410), or a token of another environment or app.
            return .targetInvalid(reason: reason)
        case (403, "ExpiredProviderToken"):
            return .retry(reason: reason, after: nil)
        case (429, _), (500, _), (503, _), (400, "IdleTimeout"):
            return .retry(reason: reason, after: ProviderOutcome.retryAfter(headers["retry-after"]))
        default:
            // DeviceTokenNotForTopic, BadTopic, TopicDisallowed, BadCertificate, InvalidProviderToken, PayloadTooLarge,
            // BadCollapseId, BadExpirationDate, BadPriority, Forbidden… : the request or the credentials are wrong;
            // sending it again would fail again.
            return .failed(reason: reason)
        }
    }
}
