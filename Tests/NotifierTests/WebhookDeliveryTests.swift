import CurlClient
import Foundation
import HeraldTestSupport
import ProviderSimulators
import Shared
import Testing

@testable import Notifier

/// Standard Webhooks' reference verifier (PyPI `standardwebhooks`): for each case `{secret, body, headers}`, whether
/// `Webhook(secret).verify(body, headers)` accepts it; prints a JSON list of booleans.
let standardWebhooksJudge = """
    import json, sys
    from standardwebhooks import Webhook, WebhookVerificationError
    verdicts = []
    for case in json.load(open(sys.argv[1])):
        try:
            Webhook(case["secret"]).verify(case["body"], case["headers"])
            verdicts.append(True)
        except WebhookVerificationError:
            verdicts.append(False)
    print(json.dumps(verdicts))
    """

/// What the reference verifier says of each (secret, recorded call) pair, in order.
func referenceVerdicts(_ cases: [(secret: String, body: String, headers: [String: String])]) async throws -> [Bool] {
    let json = JSONValue.array(cases.map { item in
        .object([
            JSONMember("secret", .string(item.secret)), JSONMember("body", .string(item.body)),
            JSONMember("headers", .object(item.headers.sorted { $0.key < $1.key }.map { JSONMember($0.key, .string($0.value)) })),
        ])
    })
    let (status, verdict) = try await runJudge(standardWebhooksJudge, cases: json)
    #expect(status == 0, "\(verdict)")
    return try JSONDecoder().decode([Bool].self, from: Data(verdict.utf8))
}

@Suite("Webhooks: signatures, the address guard, answers")
struct WebhookSignatureTests {
    static let secrets = try! #require(NotifierHarness.catalog.project("demo")?.webhooks["crm"]?.secrets)

    @Test("the signature is Standard Webhooks': the specification's own vector")
    func specificationVector() {
        let key = AppsCatalog.Webhook.key("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")!
        let header = WebhookSignature.header(
            id: "msg_p5jXN8AQM9LWM0D4loKWxJek", timestamp: 1_614_265_330, body: Array(#"{"test": 2432232314}"#.utf8), keys: [key])
        #expect(header == "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=")
    }

    @Test("a signed request verifies with the reference verifier under each secret of a rotation; a changed body, another secret or an old timestamp does not")
    func referenceVerifier() async throws {
        let provider = WebhookProvider(driver: CurlDriver(), settings: .init(allowPlainHTTP: true), catalog: NotifierHarness.catalog)
        var send = sendRequest(id: "a1b2", channel: .webhook, content: [:])
        send.endpoint = "crm"
        // Bytes a re-serialisation would change (spacing, key order, an escaped slash, non-ASCII): signed as sent.
        let body = #"{"z": 1,  "a":"caf\u00e9 \/ é", "n": [1.50, 2e3]}"#
        send.content = ["url": "https://crm.example.com/hooks/orders?x=1", "body": body, "header.X-Shop": "demo"]
        let keys = Self.secrets.compactMap(AppsCatalog.Webhook.key)
        let request = try #require(provider.request(
            DeliveryAttempt(request: send, target: DeliveryTarget(id: "demo/crm", address: ""), attempt: 1), keys: keys,
            privateNetwork: false, now: Date()))
        let headers = Dictionary(request.headers.map { ($0.0.lowercased(), $0.1) }) { $1 }
        #expect(headers["webhook-id"] == "msg_a1b2" && headers["x-shop"] == "demo" && headers["content-type"] == "application/json")
        #expect(headers["webhook-signature"]?.split(separator: " ").count == 2, "one signature per secret")
        #expect(request.body == Array(body.utf8) && request.publicAddressesOnly && request.protocols == "http,https")
        let other = "whsec_" + Data((0..<32).map { UInt8($0) }).base64EncodedString()
        var stale = headers
        stale["webhook-timestamp"] = String(Int(Date().timeIntervalSince1970) - 600)
        let verdicts = try await referenceVerdicts([
            (Self.secrets[0], body, headers), (Self.secrets[1], body, headers),
            (Self.secrets[0], body.replacingOccurrences(of: "1.50", with: "1.5"), headers), (other, body, headers),
            (Self.secrets[0], body, stale),
        ])
        #expect(verdicts == [true, true, false, false, false])
        provider.driver.shutdown()
    }

    @Test(
        "endpoints' answers: 2xx sent, 410 parks and disables, 408/429/5xx again (Retry-After), other 4xx and redirects fail at once",
        arguments: [
            (200, ProviderOutcome.accepted(messageID: nil)), (204, .accepted(messageID: nil)),
            (410, .endpointGone(reason: .status(.http, "410"))), (429, .retry(reason: .status(.http, "429"), after: .seconds(7))),
            (503, .retry(reason: .status(.http, "503"), after: .seconds(7))), (408, .retry(reason: .status(.http, "408"), after: .seconds(7))),
            (400, .failed(reason: .status(.http, "400"))), (404, .failed(reason: .status(.http, "404"))),
            (302, .failed(reason: .status(.http, "302"))),
        ])
    func answers(status: Int, expected: ProviderOutcome) {
        let outcome = WebhookProvider.outcome(status: status, headers: ["retry-after": "7"])
        switch (outcome, expected) {
        case (.endpointGone(let a), .endpointGone(let b)): #expect(a.text.hasPrefix(b.text))
        default: #expect(outcome == expected)
        }
    }

    @Test("a request written to the topic by anything but the orchestrator is checked again: a line break in a header, a header Herald sets, another method")
    func rechecked() {
        #expect(WebhookProvider.requestProblem(["method": "POST", "header.X-A": "a", "content_type": "application/json"]) == nil)
        #expect(WebhookProvider.requestProblem(["header.X-A": "a\r\nX-Injected: 1"]) == "X-A: a line break in a header")
        #expect(WebhookProvider.requestProblem(["header.Webhook-Id": "forged"]) != nil)
        #expect(WebhookProvider.requestProblem(["method": "GET"]) == "method GET")
        #expect(WebhookProvider.requestProblem(["content_type": "text/plain\nX: 1"]) != nil)
    }

    @Test(
        "the address guard refuses private, loopback, link-local, shared, reserved and multicast addresses, IPv4-mapped ones included",
        arguments: [
            ("127.0.0.1", false), ("10.1.2.3", false), ("172.16.0.1", false), ("172.31.255.255", false), ("192.168.1.1", false),
            ("169.254.169.254", false), ("100.64.0.1", false), ("0.0.0.0", false), ("224.0.0.1", false), ("255.255.255.255", false),
            ("198.18.0.1", false), ("::1", false), ("::", false), ("fe80::1", false), ("fd00::1", false), ("ff02::1", false),
            ("::ffff:127.0.0.1", false), ("::ffff:10.0.0.1", false), ("64:ff9b::a9fe:a9fe", false), ("2001:db8::1", false),
            ("93.184.216.34", true), ("172.32.0.1", true), ("100.128.0.1", true), ("2606:4700::1111", true),
            ("::ffff:8.8.8.8", true), ("crm.example.com", nil),
        ] as [(String, Bool?)])
    func addressGuard(address: String, isPublic: Bool?) {
        #expect(AddressGuard.isPublic(address) == isPublic)
    }
}

@Suite("Webhooks: delivery against the simulators' receiver", .timeLimit(.minutes(5)))
struct WebhookDeliveryTests {
    @Test("a call reaches the receiver signed (verified by the receiver and by the reference verifier), with its headers and body as rendered")
    func signedDelivery() async throws {
        let harness = try await NotifierHarness()
        // The receiver knows only the newer secret: a rotation in progress still verifies.
        harness.simulators.webhookSecrets = [WebhookSignatureTests.secrets[1]]
        try await harness.startWorkers([.webhook])
        let body = #"{"customer":"paul","amount":12.5}"#
        try await harness.send(harness.webhookSend(id: "w-1", path: "/orders/paul?source=herald", body: body, headers: ["X-Campaign": "Orders"]))
        let reports = try await harness.reports { $0.contains { $0.outcome == .sent } }
        let sent = try #require(reports.first { $0.outcome == .sent })
        #expect(sent.channel == .webhook && sent.targetID == "demo/crm" && sent.httpStatus == 200 && sent.latencyMS != nil)
        #expect(sent.provider == "webhook" && sent.attempts == 1)
        let call = try #require(harness.simulators.received("webhook-crm").first)
        #expect(call.status == 200 && call.target == "/hooks/crm/orders/paul?source=herald" && call.body == body)
        #expect(call.headers["webhook-id"] == "msg_w-1" && call.headers["x-campaign"] == "Orders")
        #expect(call.headers["user-agent"] == WebhookProvider.userAgent)
        let verdicts = try await referenceVerdicts(WebhookSignatureTests.secrets.map { ($0, call.body, call.headers) })
        #expect(verdicts == [true, true])
        await harness.shutdown()
    }

    @Test("an endpoint answering 503 is tried again with the same webhook-id, not before its Retry-After; each attempt is reported with its status and latency; a 400 fails at once")
    func retries() async throws {
        let harness = try await NotifierHarness()
        harness.simulators.setFault("webhook-crm", .init(status: 503, retryAfter: 1, count: 2))
        try await harness.startWorkers([.webhook])
        try await harness.send(harness.webhookSend(id: "w-retry"))
        let reports = try await harness.reports { $0.contains { $0.sendID == "w-retry" && $0.outcome == .sent } }
        let calls = harness.simulators.received("webhook-crm")
        #expect(calls.map(\.status) == [503, 503, 200])
        #expect(Set(calls.map { $0.headers["webhook-id"] }) == ["msg_w-retry"], "the same id on every attempt")
        // Retry-After: 1 s, far above the policy's 100 ms cap here.
        for (earlier, later) in zip(calls, calls.dropFirst()) { #expect(later.at.timeIntervalSince(earlier.at) >= 0.95) }
        let mine = reports.filter { $0.sendID == "w-retry" }
        #expect(mine.map(\.outcome) == [.retrying, .retrying, .sent])
        #expect(mine.map(\.httpStatus) == [503, 503, 200] && mine.allSatisfy { $0.latencyMS != nil })
        #expect(Set(mine.map(\.id)).count == 3, "each attempt's report has its own id")

        harness.simulators.setFault("webhook-crm", .init(status: 400, count: 1))
        try await harness.send(harness.webhookSend(id: "w-400"))
        let failed = try await harness.reports { $0.contains { $0.sendID == "w-400" } }.filter { $0.sendID == "w-400" }
        #expect(failed.map(\.outcome) == [.failed] && failed.first?.httpStatus == 400 && failed.first?.reason == "HTTP 400")
        #expect(harness.simulators.received("webhook-crm").count == 4)
        await harness.shutdown()
    }

    @Test("a 410 parks the message and disables the endpoint (herald.webhooks); later messages are parked without a call; a replay sends them all, oldest first")
    func goneThenReplay() async throws {
        // One call at a time to the endpoint: the order they leave in is the order they arrive in.
        let harness = try await NotifierHarness(webhookLanes: 1)
        harness.simulators.setFault("webhook-crm", .init(status: 410, count: 1))
        try await harness.startWorkers([.webhook])
        try await harness.send(harness.webhookSend(id: "w-a", path: "/a"))
        _ = try await harness.reports { $0.contains { $0.sendID == "w-a" && $0.outcome == .parked } }
        #expect(harness.partitions.webhookGate.isDisabled("demo/crm"))
        let states = try await readTopic(HeraldTopic.webhooks.name, bootstrap: harness.cluster.bootstrapServers, logger: harness.logger) {
            !$0.isEmpty
        }
        let state = try Wire.decode(WebhookEndpointState.self, from: try #require(states.first?.value))
        #expect(state.disabled && state.key == "demo/crm" && state.sendID == "w-a" && state.reason == "gone")

        for id in ["w-b", "w-c"] { try await harness.send(harness.webhookSend(id: id, path: "/\(id.dropFirst(2))")) }
        let parked = try await harness.reports { reports in ["w-b", "w-c"].allSatisfy { id in reports.contains { $0.sendID == id } } }
        #expect(parked.filter { $0.sendID != "w-a" }.map(\.outcome) == [.parked, .parked])
        #expect(harness.simulators.received("webhook-crm").count == 1, "nothing called while disabled")
        #expect(try await harness.partitions.ledgerStates(.webhook) == ["parked": 3])

        // `herald webhook replay demo/crm`, as every notifier's follower reads it.
        let follower = WebhookStateApplier(
            gate: harness.partitions.webhookGate, partitions: harness.partitions, catalog: NotifierHarness.catalog, logger: harness.logger)
        let enabled = WebhookEndpointState(project: "demo", endpoint: "crm", disabled: false, reason: "replay", by: "herald", at: Date())
        await follower.apply(KafkaRecord(
            topic: HeraldTopic.webhooks.name, partition: 0, offset: 1, key: Array(enabled.key.utf8), value: try Wire.encode(enabled)))
        #expect(!harness.partitions.webhookGate.isDisabled("demo/crm"))
        _ = try await harness.reports { reports in reports.filter { $0.outcome == .sent }.count == 3 }
        let calls = harness.simulators.received("webhook-crm").map(\.target)
        #expect(calls == ["/hooks/crm/a", "/hooks/crm/a", "/hooks/crm/b", "/hooks/crm/c"], "the parked ones in the order they came")
        #expect(try await harness.partitions.ledgerStates(.webhook) == ["sent": 3])
        await harness.shutdown()
    }

    @Test("the address guard: an endpoint not allowed a private address is refused at 127.0.0.1 and at a name that resolves to it, without a call")
    func privateAddressRefused() async throws {
        let harness = try await NotifierHarness()
        var catalog = NotifierHarness.catalog
        catalog.projects[0].webhooks["crm"]?.privateNetwork = false
        try await harness.startWorkers([.webhook], providers: [.webhook: ["webhook": harness.webhookProvider(catalog: catalog)]])
        var byName = harness.webhookSend(id: "w-name")
        byName.content["url"] = byName.content["url"]!.replacingOccurrences(of: "127.0.0.1", with: "localhost")
        try await harness.send(harness.webhookSend(id: "w-ip"))
        try await harness.send(byName)
        let reports = try await harness.reports { $0.filter { $0.outcome == .failed }.count == 2 }
        for report in reports {
            #expect(report.reason?.hasPrefix("address_refused") == true, "\(report.reason ?? "")")
            #expect(report.attempts == 1 && report.httpStatus == nil)
        }
        #expect(harness.simulators.received("webhook-crm").isEmpty)
        await harness.shutdown()
    }
}
