import Crypto
import CurlClient
import Foundation
import Shared
import Testing
import _CryptoExtras

@testable import Notifier

/// A send request as the orchestrator produces it.
func sendRequest(
    id: String = "0123456789abcdef0123456789abcdef", channel: MessageChannel = .push, marketing: Bool = true,
    app: String? = "demo-ios", content: [String: String] = ["title": "Hello", "body": "World"],
    payload: [String: JSONValue]? = nil, key: String = "demo/paul", expiresAt: Date? = nil, trigger: TriggerType = .event
) -> SendRequest {
    SendRequest(
        sendID: id, project: "demo", profileKey: key, customID: key.split(separator: "/").last.map(String.init),
        channel: channel, marketing: marketing, app: channel == .push ? app : nil, campaign: "cart", step: "message-0",
        occurrence: "evt-1", template: "t", language: "default", content: content, payload: payload,
        trigger: .init(type: trigger, eventName: "add_to_cart", eventID: "evt-1", at: Date(timeIntervalSince1970: 1_700_000_000)),
        decidedAt: Date(timeIntervalSince1970: 1_700_000_001), expiresAt: expiresAt)
}

let token64 = String(repeating: "ab", count: 32)

@Suite("Providers: requests and answers")
struct ProviderTests {
    @Test(
        "APNs answers are classified as Apple documents them",
        arguments: [
            (200, "", ProviderOutcome.accepted(messageID: "id-1")),
            (410, #"{"reason":"Unregistered","timestamp":1}"#, .targetInvalid(reason: .provider("Unregistered"))),
            (410, #"{"reason":"ExpiredToken"}"#, .targetInvalid(reason: .provider("ExpiredToken"))),
            (400, #"{"reason":"BadDeviceToken"}"#, .targetInvalid(reason: .provider("BadDeviceToken"))),
            (400, #"{"reason":"DeviceTokenNotForTopic"}"#, .failed(reason: .provider("DeviceTokenNotForTopic"))),
            (400, #"{"reason":"BadCollapseId"}"#, .failed(reason: .provider("BadCollapseId"))),
            (400, #"{"reason":"IdleTimeout"}"#, .retry(reason: .provider("IdleTimeout"), after: .seconds(7))),
            (403, #"{"reason":"ExpiredProviderToken"}"#, .retry(reason: .provider("ExpiredProviderToken"), after: nil)),
            (403, #"{"reason":"InvalidProviderToken"}"#, .failed(reason: .provider("InvalidProviderToken"))),
            (413, #"{"reason":"PayloadTooLarge"}"#, .failed(reason: .provider("PayloadTooLarge"))),
            (429, #"{"reason":"TooManyRequests"}"#, .retry(reason: .provider("TooManyRequests"), after: .seconds(7))),
            (500, #"{"reason":"InternalServerError"}"#, .retry(reason: .provider("InternalServerError"), after: .seconds(7))),
            (503, #"{"reason":"ServiceUnavailable"}"#, .retry(reason: .provider("ServiceUnavailable"), after: .seconds(7))),
        ])
    func apnsOutcomes(status: Int, body: String, expected: ProviderOutcome) {
        let headers = ["apns-id": "id-1", "retry-after": "7"]
        #expect(APNsProvider.outcome(status: status, body: Array(body.utf8), headers: headers) == expected)
    }

    @Test(
        "FCM answers are classified by their FcmError code",
        arguments: [
            (200, #"{"name":"projects/p/messages/1"}"#, ProviderOutcome.accepted(messageID: "projects/p/messages/1")),
            (404, #"{"error":{"status":"NOT_FOUND","details":[{"errorCode":"UNREGISTERED"}]}}"#, .targetInvalid(reason: .provider("UNREGISTERED"))),
            (400, #"{"error":{"status":"INVALID_ARGUMENT","details":[{"errorCode":"INVALID_ARGUMENT"}]}}"#, .failed(reason: .provider("INVALID_ARGUMENT"))),
            (403, #"{"error":{"status":"PERMISSION_DENIED","details":[{"errorCode":"SENDER_ID_MISMATCH"}]}}"#, .failed(reason: .provider("SENDER_ID_MISMATCH"))),
            (429, #"{"error":{"status":"RESOURCE_EXHAUSTED","details":[{"errorCode":"QUOTA_EXCEEDED"}]}}"#, .retry(reason: .provider("QUOTA_EXCEEDED"), after: .seconds(3))),
            (503, #"{"error":{"status":"UNAVAILABLE"}}"#, .retry(reason: .provider("UNAVAILABLE"), after: .seconds(3))),
            (500, "not json", .retry(reason: .status(.http, "500"), after: .seconds(3))),
            (401, #"{"error":{"status":"UNAUTHENTICATED"}}"#, .retry(reason: .provider("UNAUTHENTICATED"), after: nil)),
        ])
    func fcmOutcomes(status: Int, body: String, expected: ProviderOutcome) {
        #expect(FCMProvider.outcome(status: status, body: Array(body.utf8), headers: ["retry-after": "3"]) == expected)
    }

    @Test(
        "SMS API answers: STOP list, invalid numbers, rate limits",
        arguments: [
            (201, #"{"sid":"SM1"}"#, ProviderOutcome.accepted(messageID: "SM1")),
            (400, #"{"code":21610,"message":"unsubscribed"}"#, .unsubscribed(reason: .status(.sms, "21610", detail: "recipient unsubscribed"))),
            (400, #"{"code":21211}"#, .targetInvalid(reason: .status(.sms, "21211", detail: "invalid number"))),
            (400, #"{"code":21614}"#, .targetInvalid(reason: .status(.sms, "21614", detail: "invalid number"))),
            (429, #"{"code":20429}"#, .retry(reason: .status(.http, "429"), after: nil)),
            (503, "", .retry(reason: .status(.http, "503"), after: nil)),
            (401, #"{"code":20003}"#, .failed(reason: .herald(.smsAuth, detail: "HTTP 401"))),
            (400, #"{"code":21602}"#, .failed(reason: .status(.sms, "21602"))),
        ])
    func smsOutcomes(status: Int, body: String, expected: ProviderOutcome) {
        #expect(SMSProvider.outcome(status: status, body: Array(body.utf8), headers: [:]) == expected)
    }

    @Test(
        "SMTP replies: 550/551/553 bounce, other 5xx fail, 4xx and broken connections are retried",
        arguments: [
            (550, 55, ProviderOutcome.targetInvalid(reason: .status(.smtp, "550", detail: "hard bounce"))),
            (553, 55, .targetInvalid(reason: .status(.smtp, "553", detail: "hard bounce"))),
            (554, 55, .failed(reason: .status(.smtp, "554"))),
            (451, 55, .retry(reason: .status(.smtp, "451"), after: nil)),
            (0, 67, .failed(reason: .herald(.smtpAuth, detail: "the server refused the login"))),
            (0, 7, .retry(reason: .herald(.transport, detail: "refused"), after: nil)),
        ])
    func smtpOutcomes(status: Int, code: Int, expected: ProviderOutcome) {
        #expect(SMTPProvider.outcome(TransferError(code: code, message: "refused", status: status)) == expected)
    }

    @Test("Retry-After in seconds or as an HTTP date")
    func retryAfter() {
        let now = Date(timeIntervalSince1970: 1_445_412_480)
        #expect(ProviderOutcome.retryAfter("120", now: now) == .seconds(120))
        #expect(ProviderOutcome.retryAfter("Wed, 21 Oct 2015 07:28:30 GMT", now: now) == .seconds(30))
        #expect(ProviderOutcome.retryAfter("soon", now: now) == nil)
        #expect(ProviderOutcome.retryAfter(nil, now: now) == nil)
        // A provider's date may be any year: a day at most (the retry policy caps it lower still).
        #expect(ProviderOutcome.retryAfter("Wed, 21 Oct 99999 07:28:30 GMT", now: now) == .seconds(86_400))
    }

    @Test(
        "a reason's text (the report and the ledger) and its label (the metrics), from one value",
        arguments: [
            (DeliveryReason.provider("TooManyRequests"), "TooManyRequests", "TooManyRequests"),
            (.status(.http, "503"), "HTTP 503", "http_503"), (.status(.smtp, "421"), "smtp 421", "smtp_421"),
            (.status(.sms, "21610", detail: "recipient unsubscribed"), "sms 21610: recipient unsubscribed", "sms_21610"),
            (.herald(.maxRetryAttempts, detail: "HTTP 500"), "max_retry_attempts: HTTP 500", "max_retry_attempts"),
            (.herald(.transport, detail: "Connection refused"), "transport: Connection refused", "transport"),
            (.herald(.timeout), "timeout", "timeout"), (.herald(.oauth, detail: "invalid_grant"), "oauth: invalid_grant", "oauth"),
            (.suppressed(.optedOut), "opted_out", "opted_out"),
            (.herald(.noBundleID, detail: "no bundle id configured for app x"), "no_bundle_id: no bundle id configured for app x", "no_bundle_id"),
            // A provider's answer cannot make a label anything but a short word.
            (.provider("Bad\"} oops=1 {x"), "Bad\"} oops=1 {x", "Bad"),
            (.provider(String(repeating: "A", count: 100)), String(repeating: "A", count: 100), String(repeating: "A", count: 48)),
        ])
    func reasonTextAndLabel(reason: DeliveryReason, text: String, label: String) {
        #expect(reason.text == text)
        #expect(reason.label == label)
    }

    @Test("the delivery latency counts from the trigger, or from the end of the campaign's delay")
    func latencyStart() {
        var send = sendRequest()
        let triggered = send.trigger.at
        #expect(NotifierMetrics.latencySeconds(send: send, at: triggered + 0.25) == 0.25)
        send.dueAt = triggered + 3600  // a campaign that waits an hour
        #expect(NotifierMetrics.latencySeconds(send: send, at: triggered + 3600.5) == 0.5)
        #expect(NotifierMetrics.latencySeconds(send: send, at: triggered + 3599) == 0)  // early clocks count as 0
    }

    @Test("the latency's campaign label: a configured campaign's name, never a transactional push's free label")
    func campaignLabel() {
        var send = sendRequest()
        #expect(NotifierMetrics.campaignLabel(send) == "demo/\(send.campaign)")
        send.campaign = "order-83712-receipt"
        send.transactional = true
        #expect(NotifierMetrics.campaignLabel(send) == "demo/transactional")
    }

    @Test("backoff doubles per attempt with full jitter, is capped, and never undercuts Retry-After")
    func backoff() {
        var policy = RetryPolicy(maxAttempts: 5, base: .seconds(1), cap: .seconds(10), random: { 1 })
        #expect(policy.delay(afterAttempt: 1, retryAfter: nil) == .seconds(1))
        #expect(policy.delay(afterAttempt: 2, retryAfter: nil) == .seconds(2))
        #expect(policy.delay(afterAttempt: 4, retryAfter: nil) == .seconds(8))
        #expect(policy.delay(afterAttempt: 9, retryAfter: nil) == .seconds(10))
        policy.random = { 0.5 }
        #expect(policy.delay(afterAttempt: 3, retryAfter: nil) == .seconds(2))
        #expect(policy.delay(afterAttempt: 1, retryAfter: .seconds(30)) == .seconds(30))
    }

    @Test("the APNs payload: aps alert, Herald's key, the custom payload at the root, mutable-content for an image")
    func apnsPayload() throws {
        let send = sendRequest(
            content: ["title": "Hi", "body": "Cart", "deeplink": "demo://cart", "image_url": "https://x/i.png", "sound": "default"],
            payload: ["screen": "cart", "aps": "ignored"], trigger: .api)
        let json = try JSONParser.parse(APNsProvider.payload(send))
        #expect(json["aps"]?["alert"]?["title"]?.stringValue == "Hi")
        #expect(json["aps"]?["alert"]?["body"]?.stringValue == "Cart")
        #expect(json["aps"]?["sound"]?.stringValue == "default")
        #expect(json["aps"]?["mutable-content"] == .number("1"))
        #expect(json["com.herald"]?["i"]?.stringValue == send.sendID)
        #expect(json["com.herald"]?["l"]?.stringValue == "demo://cart")
        #expect(json["com.herald"]?["t"]?.stringValue == "t")
        #expect(json["com.herald"]?["at"]?["u"]?.stringValue == "https://x/i.png")
        #expect(json["screen"]?.stringValue == "cart")
        #expect(json["aps"]?["alert"] != nil)  // the custom "aps" did not replace Apple's
    }

    @Test("APNs headers: push type, priority, expiration, collapse id, a stable apns-id; too large payloads are refused")
    func apnsRequest() throws {
        let target = DeliveryTarget(id: "i1", address: token64, installationID: "i1", app: "demo-ios", platform: .ios, environment: .sandbox)
        let send = sendRequest(content: ["body": "B", "collapse_id": "cart"])
        let request = try APNsProvider.request(
            DeliveryAttempt(request: send, target: target, attempt: 1), topic: "com.example.demo", jwt: "a.b.c", settings: .init())
        let headers = Dictionary(uniqueKeysWithValues: request.headers)
        #expect(request.url == "https://api.sandbox.push.apple.com/3/device/\(token64)")
        #expect(headers["apns-push-type"] == "alert")
        #expect(headers["apns-priority"] == "10")
        #expect(headers["apns-topic"] == "com.example.demo")
        #expect(headers["apns-collapse-id"] == "cart")
        #expect(headers["apns-expiration"] == String(1_700_000_001 + 30 * 86_400))
        #expect(headers["apns-id"] == APNsProvider.messageID(sendID: send.sendID, target: "i1"))
        #expect(headers["apns-id"]?.count == 36)
        let background = try APNsProvider.request(
            DeliveryAttempt(request: sendRequest(content: [:]), target: target, attempt: 1), topic: "t", jwt: "a.b.c", settings: .init())
        #expect(Dictionary(uniqueKeysWithValues: background.headers)["apns-push-type"] == "background")
        #expect(Dictionary(uniqueKeysWithValues: background.headers)["apns-priority"] == "5")
        let huge = sendRequest(content: ["body": String(repeating: "x", count: 5000)])
        #expect(throws: APNsProvider.APNsRequestProblem.self) {
            try APNsProvider.request(DeliveryAttempt(request: huge, target: target, attempt: 1), topic: "t", jwt: "a.b.c", settings: .init())
        }
        // A collapse id is a header value: a line break in it would add a header of the sender's choosing.
        for collapse in ["cart\r\napns-priority: 10", "cart\nx", "cart\u{0}"] {
            let injected = sendRequest(content: ["body": "B", "collapse_id": collapse])
            #expect(throws: APNsProvider.APNsRequestProblem.self) {
                try APNsProvider.request(DeliveryAttempt(request: injected, target: target, attempt: 1), topic: "t", jwt: "a.b.c", settings: .init())
            }
        }
    }

    @Test("the APNs provider token is an ES256 JWT that verifies, reused until it is refreshed")
    func apnsToken() throws {
        let key = P256.Signing.PrivateKey()
        let signer = try APNsTokenSigner(p8: key.pemRepresentation, keyID: "ABC123DEFG", teamID: "TEAM123456", refreshAfter: .seconds(40 * 60))
        let start = Date(timeIntervalSince1970: 1_700_000_000)
        let token = try signer.token(now: start)
        let parts = token.split(separator: ".").map(String.init)
        #expect(parts.count == 3)
        let header = try JSONParser.parse(Base64URL.decode(parts[0])!)
        let claims = try JSONParser.parse(Base64URL.decode(parts[1])!)
        #expect(header["alg"]?.stringValue == "ES256" && header["kid"]?.stringValue == "ABC123DEFG")
        #expect(claims["iss"]?.stringValue == "TEAM123456" && claims["iat"] == .number("1700000000"))
        let signature = try P256.Signing.ECDSASignature(rawRepresentation: Base64URL.decode(parts[2])!)
        #expect(key.publicKey.isValidSignature(signature, for: Array("\(parts[0]).\(parts[1])".utf8)))
        #expect(try signer.token(now: start.addingTimeInterval(39 * 60)) == token)
        #expect(try signer.token(now: start.addingTimeInterval(41 * 60)) != token)
        let current = try signer.token(now: start.addingTimeInterval(42 * 60))
        signer.expire(current)
        #expect(try signer.token(now: start.addingTimeInterval(43 * 60)) != current)
    }

    @Test("the FCM OAuth2 grant is an RS256 JWT for the token endpoint that verifies")
    func fcmAssertion() throws {
        let key = try _RSA.Signing.PrivateKey(keySize: .bits2048)
        let file = """
            {"type":"service_account","project_id":"demo-fcm","private_key_id":"k1","private_key":\(JSONValue.string(key.pemRepresentation).serializedText),"client_email":"herald@demo.iam.gserviceaccount.com","token_uri":"http://127.0.0.1:1/token"}
            """
        let account = try ServiceAccount.parse(Array(file.utf8))
        let assertion = try account.assertion(now: Date(timeIntervalSince1970: 1_700_000_000), scope: AccessTokens.scope)
        let parts = assertion.split(separator: ".").map(String.init)
        let claims = try JSONParser.parse(Base64URL.decode(parts[1])!)
        #expect(claims["aud"]?.stringValue == "http://127.0.0.1:1/token")
        #expect(claims["exp"] == .number("1700003600"))
        #expect(claims["scope"]?.stringValue == "https://www.googleapis.com/auth/firebase.messaging")
        let signature = _RSA.Signing.RSASignature(rawRepresentation: Base64URL.decode(parts[2])!)
        #expect(key.publicKey.isValidSignature(signature, for: Array("\(parts[0]).\(parts[1])".utf8), padding: .insecurePKCS1v1_5))
        #expect(throws: ServiceAccount.Problem.self) { try ServiceAccount.parse(Array(#"{"project_id":"x"}"#.utf8)) }
    }

    @Test("unsubscribe links are opaque and sealed; a changed or foreign token does not verify; first-format links still do")
    func unsubscribeLinks() {
        let links = UnsubscribeLinks(secret: "0123456789abcdef-secret", publicURL: "https://notify.example.com/")
        let claim = UnsubscribeLinks.Claim(profileKey: "demo/paul", address: "paul@example.com", sendID: "s1")
        let url = links.url(claim)
        #expect(url.hasPrefix("https://notify.example.com/v1/unsubscribe/"))
        let token = String(url.dropFirst("https://notify.example.com/v1/unsubscribe/".count))
        #expect(links.verify(token) == claim)
        #expect(UnsubscribeLinks(secret: "another-secret-0123", publicURL: "x").verify(token) == nil)
        #expect(links.verify("garbage") == nil)
        // Opaque: the address, the profile and the send cannot be read out of the link, whatever is decoded.
        let decoded = String(decoding: Base64URL.decode(String(token.dropFirst(3))) ?? [], as: UTF8.self)
        #expect(token.hasPrefix("v2.") && !decoded.contains("paul") && !token.contains("paul"))
        // Sealed: any changed character is refused; two links for the same claim differ (a fresh nonce).
        for index in [3, token.count / 2, token.count - 1] {
            var characters = Array(token)
            characters[index] = characters[index] == "A" ? "B" : "A"
            #expect(links.verify(String(characters)) == nil, "changed at \(index)")
        }
        #expect(links.token(claim) != token)
        // Links of the first format, already in mailboxes, still work; a forged one does not.
        let legacy = links.legacyToken(claim)
        #expect(links.verify(legacy) == claim)
        let other = UnsubscribeLinks.Claim(profileKey: "demo/anna", address: "anna@example.com", sendID: "s1")
        let forged = links.legacyToken(other).split(separator: ".")[0] + "." + legacy.split(separator: ".")[1]
        #expect(links.verify(String(forged)) == nil)
    }

    @Test("SMS replies: keywords and the provider's signature")
    func smsReplies() {
        #expect(SMSReplies.outcome(" stop ") == .unsubscribed)
        #expect(SMSReplies.outcome("Unsubscribe.") == .unsubscribed)
        #expect(SMSReplies.outcome("START") == .subscribed)
        #expect(SMSReplies.outcome("thanks!") == nil)
        let params = [("From", "+33612345678"), ("Body", "STOP"), ("To", "+15550001111")]
        let signature = SMSReplies.signature(url: "https://n.example.com/v1/webhooks/sms", parameters: params, token: "tok")
        #expect(SMSReplies.verify(signature: signature, url: "https://n.example.com/v1/webhooks/sms", parameters: params.reversed(), token: "tok"))
        #expect(!SMSReplies.verify(signature: signature, url: "https://n.example.com/v1/webhooks/sms", parameters: [("From", "+1")], token: "tok"))
        #expect(!SMSReplies.verify(signature: signature, url: "https://n.example.com/v1/webhooks/sms", parameters: params, token: "other"))
    }

    @Test("the email: multipart text and HTML, a Message-ID from the send, one-click unsubscribe for marketing only")
    func emailMessage() {
        let links = UnsubscribeLinks(secret: "0123456789abcdef-secret", publicURL: "https://n.example.com")
        let target = DeliveryTarget(id: "paul@example.com", address: "paul@example.com")
        let send = sendRequest(channel: .email, content: ["subject": "Bienvenue chez nous", "text": "Hello", "html": "<p>Hello</p>"])
        let text = String(decoding: EmailMessage.build(DeliveryAttempt(request: send, target: target, attempt: 1), from: "Demo <news@example.com>", links: links, date: Date()), as: UTF8.self)
        #expect(text.contains("From: Demo <news@example.com>\r\n"))
        #expect(text.contains("To: <paul@example.com>\r\n"))
        #expect(text.contains("List-Unsubscribe: <https://n.example.com/v1/unsubscribe/"))
        #expect(text.contains("List-Unsubscribe-Post: List-Unsubscribe=One-Click\r\n"))
        #expect(text.contains("Content-Type: multipart/alternative; boundary="))
        #expect(text.contains("Content-Type: text/html; charset=utf-8"))
        #expect(text.contains(Data("<p>Hello</p>".utf8).base64EncodedString()))
        let transactional = sendRequest(channel: .email, marketing: false, content: ["subject": "Ré", "text": "x"])
        let plain = String(decoding: EmailMessage.build(DeliveryAttempt(request: transactional, target: target, attempt: 1), from: "a@b", links: links, date: Date()), as: UTF8.self)
        #expect(!plain.contains("List-Unsubscribe"))
        #expect(plain.contains("Subject: =?UTF-8?B?"))
        #expect(SMTPProvider.envelopeAddress("Demo <news@example.com>") == "news@example.com")
    }
}

extension JSONValue {
    var serializedText: String { String(decoding: serialized, as: UTF8.self) }
}
