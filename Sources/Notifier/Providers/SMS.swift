@preconcurrency import Crypto
import CurlClient
import Foundation
import Metrics
import ServiceSupport
import Shared

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
    /// A project's own sending number (`sms_from`), else `settings.from`.
    var senders: SMSSenders?
    var maxInFlight: Int { settings.maxInFlight }

    func deliver(_ attempt: DeliveryAttempt) async -> ProviderOutcome {
        let body = attempt.request.content["text"] ?? ""
        // Over the provider's limit it would refuse it (Twilio: 21617): failed here, with the figure.
        if let excess = SMSSegments.tooLong(body) { return .failed(reason: .herald(.bodyTooLong, detail: excess)) }
        let request = HTTPRequest(
            url: settings.url, headers: [("content-type", "application/x-www-form-urlencoded")],
            body: FormEncoding.encode([
                ("To", attempt.target.address), ("From", senders?.from(project: attempt.request.project) ?? settings.from), ("Body", attempt.request.content["text"] ?? ""),
            ]),
            timeout: settings.timeout, user: settings.account, password: settings.token)
        switch await driver.perform(request) {
        case .failure(let error): return .transport(error)
        case .success(let response):
            let outcome = Self.outcome(status: response.status, body: response.body, headers: response.headers)
            if case .accepted = outcome {
                // What the provider bills: segments by encoding (a single non-GSM character makes the whole text UCS-2).
                let (encoding, segments) = SMSSegments.count(body)
                Counter(label: "herald_sms_segments_total", dimensions: [("encoding", encoding.rawValue)]).increment(by: segments)
            }
            return outcome
        }
    }

    /// Codes of the common API: 21610 the recipient replied STOP, 21211/21614 not a valid mobile number.
    static func outcome(status: Int, body: [UInt8], headers: [String: String]) -> ProviderOutcome {
        let json = try? JSONParser.parse(body)
        if (200...299).contains(status) { return .accepted(messageID: json?["sid"]?.stringValue) }
        var code = ""
        if case .number(let text)? = json?["code"] { code = text }
        switch (status, code) {
        case (_, "21610"): return .unsubscribed(reason: .status(.sms, "21610", detail: "recipient unsubscribed"))
        case (_, "21211"), (_, "21614"): return .targetInvalid(reason: .status(.sms, code, detail: "invalid number"))
        case (429, _), (500...599, _):
            return .retry(reason: .status(.http, String(status)), after: ProviderOutcome.retryAfter(headers["retry-after"]))
        case (401, _), (403, _): return .failed(reason: .herald(.smsAuth, detail: "HTTP \(status)"))
        default: return .failed(reason: code.isEmpty ? .status(.http, String(status)) : .status(.sms, code))
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
