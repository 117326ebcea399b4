import CoreMetrics
import CurlClient
import Foundation
import Shared

/// Webhooks: calls to the projects' own endpoints (docs/webhooks.md). The request was rendered whole by the
/// orchestrator (`url`, `method`, `content_type`, `body`, `header.<Name>`); this signs it per Standard Webhooks with
/// every secret of the endpoint, sends it through the address guard (unless the endpoint is allowed a private
/// address), and classifies the answer: 2xx sent; 410 Gone parks it and disables the endpoint; 408, 429 and 5xx, or no
/// answer, are tried again (with `Retry-After`); any other status fails at once.
struct WebhookProvider: DeliveryProvider {
    struct Settings: Sendable, Equatable {
        /// All endpoints' calls in flight at most, and each endpoint's (so that one that hangs holds only its own).
        var maxInFlight = 100
        var maxInFlightPerEndpoint = 10
        var timeout: Duration = .seconds(15)
        /// `http://` endpoints (local simulators) are called; otherwise only `https://`.
        var allowPlainHTTP = false
    }

    let name = "webhook"
    let driver: CurlDriver
    let settings: Settings
    /// `project` → endpoint → its secrets and address allowance (`HERALD_APPS_FILE`).
    let endpoints: [String: [String: AppsCatalog.Webhook]]
    var maxInFlight: Int { settings.maxInFlight }
    static let userAgent = "Herald-Webhooks/1"

    init(driver: CurlDriver, settings: Settings, catalog: AppsCatalog) {
        self.driver = driver
        self.settings = settings
        var endpoints: [String: [String: AppsCatalog.Webhook]] = [:]
        for project in catalog.projects where !project.webhooks.isEmpty { endpoints[project.id] = project.webhooks }
        self.endpoints = endpoints
    }

    func deliver(_ attempt: DeliveryAttempt) async -> ProviderOutcome { await self.attempt(attempt).outcome }

    func attempt(_ attempt: DeliveryAttempt, now: Date = Date()) async -> ProviderAnswer {
        let send = attempt.request
        let endpointID = send.endpoint ?? ""
        guard let webhook = endpoints[send.project]?[endpointID], !webhook.keys.isEmpty else {
            return ProviderAnswer(outcome: .failed(reason: .herald(
                .webhookSecretMissing, detail: "no secrets for \(send.project)/\(endpointID) in HERALD_APPS_FILE (webhooks)")))
        }
        // The orchestrator rendered and checked the request; a record written to the topic by anything else is checked
        // again here, so that a header never carries a line break and the method is one of the four.
        if let problem = Self.requestProblem(send.content) {
            return ProviderAnswer(outcome: .failed(reason: .herald(.invalidHeader, detail: problem)))
        }
        guard let request = request(attempt, keys: webhook.keys, privateNetwork: webhook.privateNetwork, now: now) else {
            return ProviderAnswer(outcome: .failed(reason: .herald(
                .insecureURL, detail: "\(send.content["url"] ?? ""): only https:// unless HERALD_ALLOW_PLAIN_HTTP=true")))
        }
        let started = ContinuousClock.now
        let result = await driver.perform(request)
        let answer: ProviderAnswer
        switch result {
        case .failure(let error) where error.addressRefused:
            answer = ProviderAnswer(outcome: .failed(reason: .herald(.addressRefused, detail: error.message)))
        case .failure(let error) where error.redirectRefused:
            answer = ProviderAnswer(outcome: .failed(reason: .herald(.redirectRefused, detail: error.message)), httpStatus: error.status > 0 ? error.status : nil)
        case .failure(let error): answer = ProviderAnswer(outcome: .transport(error), httpStatus: error.status > 0 ? error.status : nil)
        case .success(let response):
            answer = ProviderAnswer(outcome: Self.outcome(status: response.status, headers: response.headers, now: now), httpStatus: response.status)
        }
        Self.record("\(send.project)/\(endpointID)", status: answer.httpStatus, duration: ContinuousClock.now - started)
        return answer
    }

    /// `herald_webhook_attempts_total{endpoint, status}` (`2xx`, `410`, `4xx`, `5xx`, `3xx`, `none`: no answer) and
    /// `herald_webhook_attempt_seconds{endpoint}`: endpoints of the apps file only, so the series are bounded by it.
    static func record(_ endpoint: String, status: Int?, duration: Duration) {
        let status = switch status {
        case nil: "none"
        case 410?: "410"
        case let code?: "\(min(max(code / 100, 1), 5))xx"
        }
        Counter(label: "herald_webhook_attempts_total", dimensions: [("endpoint", endpoint), ("status", status)]).increment()
        Timer(label: "herald_webhook_attempt_seconds", dimensions: [("endpoint", endpoint)], preferredDisplayUnit: .seconds)
            .recordNanoseconds(Int64(duration.milliseconds) * 1_000_000)
    }

    /// What makes a send's request one Herald does not make (nil: none): a method not allowed, a header name or value
    /// the rules refuse.
    static func requestProblem(_ content: [String: String]) -> String? {
        if let method = content["method"], !WebhookRequestRules.methods.contains(method) { return "method \(method)" }
        for (field, value) in content where field.hasPrefix(WebhookRequestRules.headerPrefix) || field == "content_type" {
            let name = field == "content_type" ? "content_type" : String(field.dropFirst(WebhookRequestRules.headerPrefix.count))
            if field != "content_type", let problem = WebhookRequestRules.headerNameProblem(name) { return problem }
            if let problem = WebhookRequestRules.headerValueProblem(value) { return "\(name): \(problem)" }
        }
        return nil
    }

    /// The signed request of an attempt; nil when its URL's scheme is not allowed.
    func request(_ attempt: DeliveryAttempt, keys: [[UInt8]], privateNetwork: Bool, now: Date) -> HTTPRequest? {
        let content = attempt.request.content
        let url = content["url"] ?? ""
        guard url.hasPrefix("https://") || (settings.allowPlainHTTP && url.hasPrefix("http://")) else { return nil }
        let body = Array((content["body"] ?? "").utf8)
        let id = WebhookSignature.messageID(sendID: attempt.request.sendID)
        let timestamp = Int(now.timeIntervalSince1970)
        var headers: [(String, String)] = [
            ("content-type", content["content_type"] ?? WebhookRequestRules.defaultContentType), ("user-agent", Self.userAgent),
        ]
        for (field, value) in content.sorted(by: { $0.key < $1.key }) where field.hasPrefix(WebhookRequestRules.headerPrefix) {
            headers.append((String(field.dropFirst(WebhookRequestRules.headerPrefix.count)), value))
        }
        headers += [
            ("webhook-id", id), ("webhook-timestamp", String(timestamp)),
            ("webhook-signature", WebhookSignature.header(id: id, timestamp: timestamp, body: body, keys: keys)),
        ]
        var request = HTTPRequest(
            method: content["method"] ?? WebhookRequestRules.defaultMethod, url: url, headers: headers, body: body,
            timeout: settings.timeout)
        request.publicAddressesOnly = !privateNetwork
        request.maxRedirects = WebhookRequestRules.maxRedirects
        request.protocols = settings.allowPlainHTTP ? "http,https" : "https"
        return request
    }

    /// An endpoint's answer: 2xx sent; 410 gone (the endpoint is disabled, its messages parked); 408, 429 and 5xx
    /// tried again, after `Retry-After` when it says; anything else (another 4xx, a redirect not followed) failed.
    static func outcome(status: Int, headers: [String: String], now: Date = Date()) -> ProviderOutcome {
        switch status {
        case 200...299: return .accepted(messageID: nil)
        case 410: return .endpointGone(reason: .status(.http, "410", detail: "the endpoint is gone: disabled until `herald webhook replay`"))
        case 408, 429, 500...599:
            return .retry(reason: .status(.http, String(status)), after: ProviderOutcome.retryAfter(headers["retry-after"], now: now))
        default: return .failed(reason: .status(.http, String(status)))
        }
    }
}
