@preconcurrency import Crypto
import Foundation
import Shared

/// Signed one-click unsubscribe links (RFC 8058): the token names the profile and address and is signed with the
/// notifier's secret, so that nobody can unsubscribe someone else by guessing a URL.
struct UnsubscribeLinks: Sendable {
    let secret: SymmetricKey
    /// `https://notify.example.com` (the notifier's public address).
    let publicURL: String

    init(secret: String, publicURL: String) {
        self.secret = SymmetricKey(data: Array(secret.utf8))
        self.publicURL = publicURL.hasSuffix("/") ? String(publicURL.dropLast()) : publicURL
    }

    struct Claim: Sendable, Equatable {
        var profileKey: String
        var address: String
        var sendID: String
    }

    func token(_ claim: Claim) -> String {
        let payload = JSONValue.object([
            JSONMember("p", .string(claim.profileKey)), JSONMember("a", .string(claim.address)),
            JSONMember("s", .string(claim.sendID)),
        ]).serialized
        let body = Base64URL.encode(payload)
        let mac = HMAC<SHA256>.authenticationCode(for: Array(body.utf8), using: secret)
        return body + "." + Base64URL.encode(mac)
    }

    func url(_ claim: Claim) -> String { "\(publicURL)/v1/unsubscribe/\(token(claim))" }

    /// The claim of a token this notifier signed (compared in constant time); nil for anything else.
    func verify(_ token: String) -> Claim? {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 2, let mac = Base64URL.decode(String(parts[1])),
            HMAC<SHA256>.isValidAuthenticationCode(mac, authenticating: Array(parts[0].utf8), using: secret),
            let payload = Base64URL.decode(String(parts[0])), let json = try? JSONParser.parse(payload),
            let key = json["p"]?.stringValue, let address = json["a"]?.stringValue, let sendID = json["s"]?.stringValue
        else { return nil }
        return Claim(profileKey: key, address: address, sendID: sendID)
    }
}

/// Email over SMTP through libcurl: STARTTLS and authentication as configured, a multipart text + HTML message, and
/// for marketing sends the one-click unsubscribe headers.
struct SMTPProvider: DeliveryProvider {
    struct Settings: Sendable {
        var url: String
        var from: String
        var user: String?
        var password: String?
        var startTLS: SMTPRequest.StartTLS = .required
        var connections = 4
        var timeout: Duration = .seconds(30)
    }

    let name = "smtp"
    let driver: CurlDriver
    let settings: Settings
    let links: UnsubscribeLinks
    var maxInFlight: Int { settings.connections }

    func deliver(_ attempt: DeliveryAttempt) async -> ProviderOutcome {
        let message = Self.message(attempt, from: attempt.request.content["from"] ?? settings.from, links: links, date: Date())
        let request = SMTPRequest(
            url: settings.url, from: Self.envelopeAddress(settings.from), recipients: [attempt.target.address],
            message: message, user: settings.user, password: settings.password, startTLS: settings.startTLS,
            timeout: settings.timeout)
        switch await driver.perform(request) {
        case .success:
            return .accepted(messageID: Self.messageID(attempt))
        case .failure(let error):
            return Self.outcome(error)
        }
    }

    /// `Name <a@b>` → `a@b`.
    static func envelopeAddress(_ from: String) -> String {
        if let open = from.lastIndex(of: "<"), let close = from.lastIndex(of: ">"), open < close {
            return String(from[from.index(after: open)..<close])
        }
        return from
    }

    /// SMTP's answer: a 5xx to the recipient is a hard bounce (the address is dead), another 5xx a failure, a 4xx
    /// (greylisting, a full mailbox, a busy server) and a broken connection are tried again.
    static func outcome(_ error: TransferError) -> ProviderOutcome {
        switch error.status {
        case 550, 551, 553: return .targetInvalid(reason: "hard bounce: \(error.status)")
        case 500...599: return .failed(reason: "smtp \(error.status)")
        case 400...499: return .retry(reason: "smtp \(error.status)", after: nil)
        default:
            if error.code == 67 { return .failed(reason: "smtp_auth: the server refused the login") }  // CURLE_LOGIN_DENIED
            return .transport(error)
        }
    }

    static func messageID(_ attempt: DeliveryAttempt) -> String {
        "<\(attempt.request.sendID).\(APNsProvider.messageID(sendID: attempt.request.sendID, target: attempt.target.id).prefix(8))@herald>"
    }

    /// The RFC 5322 message with a MIME multipart/alternative body (text, and HTML when the template has it), lines
    /// ending in CRLF. The Message-ID is derived from the send, so that a repeated attempt is recognisable.
    static func message(_ attempt: DeliveryAttempt, from: String, links: UnsubscribeLinks?, date: Date) -> [UInt8] {
        let send = attempt.request
        let boundary = "herald-\(send.sendID)"
        var headers = [
            "From: \(from)",
            "To: <\(attempt.target.address)>",
            "Subject: \(encodedWord(send.content["subject"] ?? ""))",
            "Date: \(rfc5322Date(date))",
            "Message-ID: \(messageID(attempt))",
            "MIME-Version: 1.0",
            "X-Herald-Send-ID: \(send.sendID)",
            "X-Herald-Campaign: \(send.campaign)",
        ]
        if let replyTo = send.content["reply_to"], !replyTo.isEmpty { headers.append("Reply-To: \(replyTo)") }
        if send.marketing, let links {
            let url = links.url(.init(profileKey: send.profileKey, address: attempt.target.address, sendID: send.sendID))
            headers.append("List-Unsubscribe: <\(url)>")
            headers.append("List-Unsubscribe-Post: List-Unsubscribe=One-Click")
        }
        var parts: [(String, String)] = [("text/plain", send.content["text"] ?? "")]
        if let html = send.content["html"], !html.isEmpty { parts.append(("text/html", html)) }
        headers.append("Content-Type: multipart/alternative; boundary=\"\(boundary)\"")
        var lines = headers + [""]
        for (type, body) in parts {
            lines += ["--\(boundary)", "Content-Type: \(type); charset=utf-8", "Content-Transfer-Encoding: base64", ""]
            lines += wrapped(Data(body.utf8).base64EncodedString())
        }
        lines.append("--\(boundary)--")
        return Array((lines.joined(separator: "\r\n") + "\r\n").utf8)
    }

    /// RFC 2047: non-ASCII header text as `=?UTF-8?B?…?=`.
    static func encodedWord(_ text: String) -> String {
        guard text.utf8.contains(where: { $0 >= 0x80 || $0 < 0x20 }) else { return text }
        return "=?UTF-8?B?\(Data(text.utf8).base64EncodedString())?="
    }

    static func rfc5322Date(_ date: Date) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss +0000"
        return formatter.string(from: date)
    }

    private static func wrapped(_ text: String) -> [String] {
        var lines: [String] = []
        var rest = Substring(text)
        while !rest.isEmpty {
            lines.append(String(rest.prefix(76)))
            rest = rest.dropFirst(76)
        }
        return lines
    }
}

/// SMS through an HTTP API of the common shape (Twilio's): a form POST with To, From and Body under basic auth,
/// answered with a JSON message or a JSON error with a numeric code.
struct SMSProvider: DeliveryProvider {
    struct Settings: Sendable {
        /// The messages endpoint, e.g. `https://api.twilio.com/2010-04-01/Accounts/AC…/Messages.json`.
        var url: String
        var account: String
        var token: String
        var from: String
        var maxInFlight = 10
        var timeout: Duration = .seconds(10)
    }

    let name = "sms"
    let driver: CurlDriver
    let settings: Settings
    var maxInFlight: Int { settings.maxInFlight }

    func deliver(_ attempt: DeliveryAttempt) async -> ProviderOutcome {
        let request = HTTPRequest(
            url: settings.url, headers: [("content-type", "application/x-www-form-urlencoded")],
            body: FormEncoding.encode([
                ("To", attempt.target.address), ("From", settings.from), ("Body", attempt.request.content["text"] ?? ""),
            ]),
            timeout: settings.timeout, user: settings.account, password: settings.token)
        switch await driver.perform(request) {
        case .failure(let error): return .transport(error)
        case .success(let response): return Self.outcome(status: response.status, body: response.body, headers: response.headers)
        }
    }

    /// Codes of the common API: 21610 the recipient replied STOP, 21211/21614 not a valid mobile number.
    static func outcome(status: Int, body: [UInt8], headers: [String: String]) -> ProviderOutcome {
        let json = try? JSONParser.parse(body)
        if (200...299).contains(status) { return .accepted(messageID: json?["sid"]?.stringValue) }
        var code = ""
        if case .number(let text)? = json?["code"] { code = text }
        switch (status, code) {
        case (_, "21610"): return .unsubscribed(reason: "recipient unsubscribed (21610)")
        case (_, "21211"), (_, "21614"): return .targetInvalid(reason: "invalid number (\(code))")
        case (429, _), (500...599, _):
            return .retry(reason: "HTTP \(status)", after: ProviderOutcome.retryAfter(headers["retry-after"]))
        case (401, _), (403, _): return .failed(reason: "sms_auth: HTTP \(status)")
        default: return .failed(reason: code.isEmpty ? "HTTP \(status)" : "sms \(code)")
        }
    }
}

/// Inbound SMS replies: keywords, and the provider's signature (Twilio's `X-Twilio-Signature`: base64 HMAC-SHA1 with
/// the auth token over the URL followed by each form parameter's name and value, sorted by name).
enum SMSReplies {
    static let stopWords: Set<String> = ["STOP", "STOPALL", "UNSUBSCRIBE", "CANCEL", "END", "QUIT", "ARRET", "STOP SMS"]
    static let startWords: Set<String> = ["START", "YES", "UNSTOP"]

    /// `unsubscribed`, `subscribed` or nil (any other text).
    static func outcome(_ body: String) -> DeliveryReport.Outcome? {
        let word = body.trimmingCharacters(in: .whitespacesAndNewlines.union(.punctuationCharacters)).uppercased()
        if stopWords.contains(word) { return .unsubscribed }
        if startWords.contains(word) { return .subscribed }
        return nil
    }

    static func signature(url: String, parameters: [(String, String)], token: String) -> String {
        let data = url + parameters.sorted { $0.0 < $1.0 }.map { $0.0 + $0.1 }.joined()
        let mac = HMAC<Insecure.SHA1>.authenticationCode(for: Array(data.utf8), using: SymmetricKey(data: Array(token.utf8)))
        return Data(mac).base64EncodedString()
    }

    static func verify(signature: String, url: String, parameters: [(String, String)], token: String) -> Bool {
        ConstantTime.equal(Array(self.signature(url: url, parameters: parameters, token: token).utf8), Array(signature.utf8))
    }
}
