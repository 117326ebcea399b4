import CompressNIO
import Foundation
import HTTPTypes
import HeraldTestSupport
import Hummingbird
import HummingbirdTesting
import Logging
import NIOCore
import ServiceSupport
import Shared
import Testing

@testable import Ingest

/// Stores records in memory, or fails like the broker would.
final class FakeSink: RecordSink {
    let stored = Locked<[IngestRecord]>([])
    let failure = Locked<KafkaError?>(nil)

    func store(_ records: [IngestRecord], requestID: String) async throws {
        if let error = failure.withLock({ $0 }) { throw error }
        stored.withLock { $0 += records }
    }

    var records: [IngestRecord] { stored.withLock { $0 } }
}

let restKey = "rest_demo_0123456789abcdef"
let iosKey = "live_demo_ios_0123456789"
let iosDevKey = "DEV_demo_ios_0123456789"
let androidKey = "live_demo_android_0123456789"
let fixedNow = Date(timeIntervalSince1970: 1_795_000_000)

struct Answer {
    var status: HTTPResponse.Status
    var headers: HTTPFields
    var json: JSONValue

    var code: String? {
        if case .string(let code)? = json["error"]?["code"] { return code }
        return nil
    }

    /// `path code` of each problem, from `rejected` (2xx) or `error.details`.
    var problems: [String] {
        let list = json["rejected"] ?? json["error"]?["details"]
        guard case .array(let items)? = list else { return [] }
        return items.compactMap { item in
            guard case .string(let path)? = item["path"], case .string(let code)? = item["code"] else { return nil }
            return "\(path) \(code)"
        }
    }

    var accepted: Int? {
        if case .number(let text)? = json["accepted"] { return Int(text) }
        return nil
    }
}

/// The sample apps file as it was before signed identity was the default: apps and sources that say
/// `"require_signed_identity": false`, sources that may set contact fields.
func legacyCatalog() throws -> AppsCatalog {
    var catalog = try AppsCatalog.load(path: sampleAppsFile)
    for p in catalog.projects.indices {
        for a in catalog.projects[p].apps.indices { catalog.projects[p].apps[a].requireSignedIdentity = false }
        for s in catalog.projects[p].sources.indices {
            catalog.projects[p].sources[s].requireSignedIdentity = false
            catalog.projects[p].sources[s].contactFields = true
        }
    }
    return catalog
}

/// The proof an app's server gives it for a custom ID (`X-CustomID-Auth`), under the app's first identity secret.
func identityProof(_ customID: String, key: String, catalog: AppsCatalog) -> String? {
    guard case .app(let project, let app, _)? = catalog.credential(for: key),
        let secret = catalog.app(project: project, id: app)?.identitySecrets.first
    else { return nil }
    return CustomIDProof.make(apiKey: key, customID: customID, secret: secret)
}

/// The campaigns the trigger API knows in these tests: config/example's `login-code` (API-triggered) and `cart-now`
/// (an event's), and a disabled API-triggered one; and journeys likewise.
let exampleCampaigns = TriggerDirectory(
    [
        "demo/login-code": .init(api: true, enabled: true), "demo/cart-now": .init(api: false, enabled: true),
        "demo/paused": .init(api: true, enabled: false),
    ],
    journeys: [
        "demo/onboarding": .init(api: true, enabled: true), "demo/welcome-series": .init(api: false, enabled: true),
        "demo/paused": .init(api: true, enabled: false),
    ])

/// Calls the ingest's router. An app write naming a `custom_id` (or a logout naming `from_custom_id`) carries that
/// user's proof, as an app of a project with signed identity (the default) sends it, unless `signed` is false or the
/// test gives its own `X-CustomID-Auth`.
func call(
    _ uri: String, method: HTTPRequest.Method = .post, key: String? = nil, rest: Bool = false, body: String? = nil,
    headers extra: HTTPFields = [:], sink: FakeSink = FakeSink(), maxBody: Int = 1 << 20, catalog: AppsCatalog? = nil,
    bytes: [UInt8]? = nil, signed: Bool = true, campaigns: TriggerDirectory = exampleCampaigns,
    actions: ActionDirectory = ActionDirectory()
) async throws -> Answer {
    let catalog = try catalog ?? AppsCatalog.load(path: sampleAppsFile)
    let router = Ingest.buildRouter(
        api: IngestAPI(catalog: catalog, sink: sink, maxBodyBytes: maxBody, now: { fixedNow }, triggers: campaigns, actions: actions))
    let app = Application(router: router, logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }))
    var headers = extra
    if let key {
        if rest { headers[.authorization] = "Bearer \(key)" } else { headers[HTTPField.Name("X-Api-Key")!] = key }
    }
    let proofHeader = HTTPField.Name("X-CustomID-Auth")!
    if signed, !rest, let key, headers[proofHeader] == nil, let body, let json = try? JSONParser.parse(Array(body.utf8)),
        let user = json["custom_id"]?.stringValue ?? json["from_custom_id"]?.stringValue,
        let proof = identityProof(user, key: key, catalog: catalog)
    {
        headers[proofHeader] = proof
    }
    let requestHeaders = headers
    return try await app.test(.router) { client in
        try await client.execute(
            uri: uri, method: method, headers: requestHeaders, body: bytes.map { ByteBuffer(bytes: $0) } ?? body.map { ByteBuffer(string: $0) }
        ) { response in
            let bytes = Array(response.body.readableBytesView)
            return Answer(
                status: response.status, headers: response.headers,
                json: bytes.isEmpty ? .null : try JSONParser.parse(bytes))
        }
    }
}

@Suite("Ingest API: authentication")
struct AuthTests {
    @Test(
        "401 for a missing or unknown key, 403 for a key of the wrong kind",
        arguments: [
            ("/v1/profiles/update", nil, true, 401, "missing_credentials"),
            ("/v1/profiles/update", "rest_nope_0123456789abcdef", true, 401, "invalid_credentials"),
            ("/v1/profiles/update", iosKey, true, 403, "wrong_key_kind"),
            ("/v1/profiles/update", restKey, false, 401, "missing_credentials"),
            ("/v1/app/events", nil, false, 401, "missing_credentials"),
            ("/v1/app/events", "nope_0123456789abcdef", false, 401, "invalid_credentials"),
            ("/v1/app/events", restKey, false, 403, "wrong_key_kind"),
        ] as [(String, String?, Bool, Int, String)])
    func refused(uri: String, key: String?, rest: Bool, status: Int, code: String) async throws {
        let sink = FakeSink()
        let answer = try await call(uri, key: key, rest: rest, body: "[]", sink: sink)
        #expect(answer.status.code == status)
        #expect(answer.code == code)
        #expect(sink.records.isEmpty)
    }
}

@Suite("Ingest API: server-side profile updates")
struct ServerAPITests {
    @Test("valid operations are stored, invalid ones reported by path; one record per update, keyed by profile")
    func update() async throws {
        let sink = FakeSink()
        let answer = try await call(
            "/v1/profiles/update", key: restKey, rest: true,
            body: #"""
                [{"identifiers":{"custom_id":"paul"},"id":"u-1",
                  "attributes":{"$email_address":"paul@example.com","age":26,"bad$":1,"$region":"fr"},
                  "events":[{"name":"purchased","attributes":{"price":9.5}},{"name":"bad-name"}]},
                 {"identifiers":{"custom_id":"null"},"attributes":{"age":3}},
                 {"identifiers":{"custom_id":"anna"},"attributes":{"plan":""},"extra":true},
                 {"identifiers":{"custom_id":"zoe"}}]
                """#, sink: sink)
        #expect(answer.status == .ok)
        #expect(answer.accepted == 1)
        #expect(
            answer.problems == [
                "[0].attributes.bad$ reserved_name", "[0].events[1].name invalid_event_name",
                "[1].identifiers.custom_id invalid_custom_id", "[2].attributes.plan empty_string", "[2].extra unknown_field",
                "[3] empty_update",
            ])
        let record = try #require(sink.records.first)
        #expect(record.key == "demo/paul")
        #expect(
            String(decoding: record.value, as: UTF8.self)
                == #"{"v":1,"kind":"ingest","op":"profile_update","id":"u-1","project":"demo","source":"server","custom_id":"paul","received_at":"2026-11-18T11:06:40.000Z","profile":{"email":"paul@example.com","region":"FR","custom_attributes":{"age.i":26}},"events":[{"name":"PURCHASED","attributes":{"price.f":9.5}}]}"#
        )
    }

    @Test(
        "request-level problems: 400 with a code, 413 over the size limit, 422 when nothing is valid",
        arguments: [
            (#"{"identifiers":{}}"#, 400, "invalid_body"),
            ("[", 400, "malformed_json"),
            ("[]", 400, "empty_request"),
            ("[" + Array(repeating: #"{"identifiers":{"custom_id":"a"},"attributes":{"x":1}}"#, count: 201).joined(separator: ",") + "]", 400, "too_many_updates"),
            (#"[{"identifiers":{"custom_id":""},"attributes":{"x":1}}]"#, 422, "validation_failed"),
            (#"[{"attributes":{"x":1}}]"#, 422, "validation_failed"),
        ])
    func requestErrors(body: String, status: Int, code: String) async throws {
        let sink = FakeSink()
        let answer = try await call("/v1/profiles/update", key: restKey, rest: true, body: body, sink: sink)
        #expect(answer.status.code == status)
        #expect(answer.code == code)
        #expect(sink.records.isEmpty)
    }

    @Test("exactly 200 updates are accepted")
    func twoHundred() async throws {
        let body = "[" + (0..<200).map { #"{"identifiers":{"custom_id":"u\#($0)"},"attributes":{"x":1}}"# }.joined(separator: ",") + "]"
        let sink = FakeSink()
        let answer = try await call("/v1/profiles/update", key: restKey, rest: true, body: body, sink: sink)
        #expect(answer.status == .ok)
        #expect(sink.records.count == 200)
        #expect(Set(sink.records.map(\.id)).count == 200)
    }

    @Test("malformed JSON says where")
    func malformed() async throws {
        let answer = try await call("/v1/profiles/update", key: restKey, rest: true, body: "[\n {\"a\" 1}]")
        #expect(answer.status == .badRequest)
        if case .string(let message)? = answer.json["error"]?["message"] {
            #expect(message.contains("line 2, column 7"))
        } else {
            Issue.record("no message")
        }
    }

    @Test("413 over the body limit, with the JSON error shape")
    func tooLarge() async throws {
        let answer = try await call(
            "/v1/profiles/update", key: restKey, rest: true, body: "[" + String(repeating: " ", count: 2000) + "]",
            maxBody: 1024)
        #expect(answer.status == .contentTooLarge)
        #expect(answer.code == "body_too_large")
    }

    @Test(
        "a broker outage or a full queue is 503 with Retry-After, never a 2xx",
        arguments: [(KafkaError.Code.brokerUnavailable, "5"), (.queueFull, "1"), (.timedOut, "5")])
    func unavailable(code: KafkaError.Code, retryAfter: String) async throws {
        let sink = FakeSink()
        sink.failure.withLock { $0 = KafkaError(code: code, reason: "test") }
        let answer = try await call(
            "/v1/profiles/update", key: restKey, rest: true, body: #"[{"identifiers":{"custom_id":"a"},"attributes":{"x":1}}]"#,
            sink: sink)
        #expect(answer.status == .serviceUnavailable)
        #expect(answer.code == "unavailable")
        #expect(answer.headers[.retryAfter] == retryAfter)
    }

    @Test("the Bearer scheme is case-insensitive; other schemes are not a REST key")
    func bearerScheme() async throws {
        let body = #"[{"identifiers":{"custom_id":"a"},"attributes":{"x":1}}]"#
        let lower = try await call("/v1/profiles/update", body: body, headers: [.authorization: "bearer \(restKey)"])
        #expect(lower.status == .ok)
        let basic = try await call("/v1/profiles/update", body: body, headers: [.authorization: "Basic \(restKey)"])
        #expect(basic.status == .unauthorized)
        #expect(basic.code == "missing_credentials")
    }

    @Test("DELETE /v1/profiles/{custom_id}, percent-decoded once")
    func delete() async throws {
        let sink = FakeSink()
        let answer = try await call("/v1/profiles/paul%20smith", method: .delete, key: restKey, rest: true, sink: sink)
        #expect(answer.status == .ok)
        #expect(sink.records.map(\.op) == [.profileDelete])
        #expect(sink.records.first?.key == "demo/paul smith")
        let encoded = FakeSink()
        _ = try await call("/v1/profiles/a%2525b%2Fc", method: .delete, key: restKey, rest: true, sink: encoded)
        #expect(encoded.records.first?.customID == "a%25b/c")
        let refused = try await call("/v1/profiles/undefined", method: .delete, key: restKey, rest: true)
        #expect(refused.status == .unprocessableContent)
        #expect(refused.problems == ["custom_id invalid_custom_id"])
    }

    @Test("POST /v1/campaigns/trigger: one record per recipient, properties merged, problems by path")
    func campaignTrigger() async throws {
        let sink = FakeSink()
        let answer = try await call(
            "/v1/campaigns/trigger", key: restKey, rest: true,
            body: #"""
                {"campaign_id":"login-code","trigger_properties":{"code":"1234","brand":"Demo"},
                 "recipients":[{"custom_id":"paul","id":"t-1","trigger_properties":{"code":"9999"}},
                               {"custom_id":"anna","trigger_properties":{"nested":{"a":1}}},
                               {"custom_id":"null"},
                               {"custom_id":"zoe","extra":1}]}
                """#, sink: sink)
        #expect(answer.status == .ok)
        #expect(answer.accepted == 2)
        #expect(
            answer.problems == [
                "recipients[1].trigger_properties.nested invalid_type", "recipients[2].custom_id invalid_custom_id",
                "recipients[3].extra unknown_field",
            ])
        #expect(sink.records.map(\.key) == ["demo/paul", "demo/zoe"])
        #expect(
            String(decoding: try #require(sink.records.first).value, as: UTF8.self)
                == #"{"v":1,"kind":"ingest","op":"campaign_trigger","id":"t-1","project":"demo","source":"server","custom_id":"paul","received_at":"2026-11-18T11:06:40.000Z","campaign":"login-code","trigger_properties":{"brand":"Demo","code":"9999"}}"#)

        let cases: [(String, Int, String)] = [
            (#"{"recipients":[{"custom_id":"paul"}]}"#, 422, "campaign_id missing_field"),
            (#"{"campaign_id":"x","recipients":[]}"#, 422, "recipients missing_field"),
            (#"{"campaign_id":"x","trigger_properties":[1],"recipients":[{"custom_id":"paul"}]}"#, 422, "trigger_properties invalid_type"),
            (#"{"campaign_id":"x","recipients":[\#((0...50).map { _ in #"{"custom_id":"p"}"# }.joined(separator: ","))]}"#, 400, "too_many_recipients"),
        ]
        for (body, status, expected) in cases {
            let refused = try await call("/v1/campaigns/trigger", key: restKey, rest: true, body: body)
            #expect(refused.status.code == status, "\(body)")
            let found = refused.problems + [refused.json["error"]?["code"]?.stringValue ?? ""]
            #expect(found.contains(expected), "\(refused.json)")
        }
        let appKey = try await call("/v1/campaigns/trigger", key: "live_demo_ios_0123456789", rest: true, body: #"{"campaign_id":"x","recipients":[{"custom_id":"p"}]}"#)
        #expect(appKey.status == .forbidden)
    }

    /// Issue 34: a trigger for a campaign that does not exist was answered 200, and only a dead letter said why.
    @Test("POST /v1/campaigns/trigger names a configured API campaign: unknown 404, triggered otherwise 422, disabled 409; 503 until the configuration is read")
    func campaignTriggerChecked() async throws {
        // (campaign, what the ingest knows, status, error code, the problem at campaign_id)
        let cases: [(String, TriggerDirectory, Int, String, String?)] = [
            ("no-such-campaign", exampleCampaigns, 404, "unknown_campaign", "unknown_campaign"),
            ("cart-now", exampleCampaigns, 422, "validation_failed", "not_api_triggered"),
            ("paused", exampleCampaigns, 409, "campaign_disabled", "campaign_disabled"),
            ("login-code", TriggerDirectory(), 503, "configuration_loading", nil),
            // Another project's campaign of that name is not this project's.
            ("login-code", TriggerDirectory(["other/login-code": .init(api: true, enabled: true)]), 404, "unknown_campaign", "unknown_campaign"),
        ]
        for (campaign, directory, status, code, problem) in cases {
            let sink = FakeSink()
            let answer = try await call(
                "/v1/campaigns/trigger", key: restKey, rest: true,
                body: #"{"campaign_id":"\#(campaign)","recipients":[{"custom_id":"paul"}]}"#, sink: sink, campaigns: directory)
            #expect(answer.status.code == status && answer.code == code, "\(campaign): \(answer.json)")
            #expect(sink.records.isEmpty)
            #expect(answer.problems == (problem.map { ["campaign_id \($0)"] } ?? []), "\(answer.json)")
        }
        // A request whose body is invalid is answered as one, whatever campaign it names.
        let invalid = try await call(
            "/v1/campaigns/trigger", key: restKey, rest: true, body: #"{"campaign_id":"no-such-campaign","recipients":[]}"#)
        #expect(invalid.status == .unprocessableContent && invalid.problems == ["recipients missing_field"])
        let noValidRecipient = try await call(
            "/v1/campaigns/trigger", key: restKey, rest: true, body: #"{"campaign_id":"no-such-campaign","recipients":[{"custom_id":"null"}]}"#)
        #expect(noValidRecipient.status == .unprocessableContent && noValidRecipient.problems == ["recipients[0].custom_id invalid_custom_id"])
        // The configuration changes live: a campaign published later is triggered.
        let directory = TriggerDirectory([:])
        #expect(try await call("/v1/campaigns/trigger", key: restKey, rest: true, body: #"{"campaign_id":"login-code","recipients":[{"custom_id":"paul"}]}"#, campaigns: directory).status == .notFound)
        let objects = [
            #"{"kind":"project","id":"demo","default_language":"en"}"#,
            #"{"kind":"template","id":"code","project":"demo","channel":"sms","variants":{"default":{"text":"{{ trigger.code }}"}}}"#,
            #"{"kind":"campaign","id":"login-code","project":"demo","type":"transactional","trigger":{"api":true},"reeligibility":"always","messages":[{"channel":"sms","template":"code"}]}"#,
        ]
        let (config, issues) = HeraldConfiguration.read(try objects.map { (file: "test", node: ConfigNode(json: try JSONParser.parse(Array($0.utf8)))) })
        #expect(issues.isEmpty && config.campaigns["demo/login-code"] != nil, "\(issues)")
        directory.update(config)
        #expect(try await call("/v1/campaigns/trigger", key: restKey, rest: true, body: #"{"campaign_id":"login-code","recipients":[{"custom_id":"paul"}]}"#, campaigns: directory).status == .ok)
    }

    @Test("POST /v1/journeys/trigger: entry_properties per recipient over the call's, one journey_trigger record each; the journey checked as campaigns are")
    func journeyTrigger() async throws {
        let sink = FakeSink()
        let answer = try await call(
            "/v1/journeys/trigger", key: restKey, rest: true,
            body: #"""
                {"journey_id":"onboarding","entry_properties":{"plan":"gold","brand":"Demo"},
                 "recipients":[{"custom_id":"paul","id":"j-1","entry_properties":{"plan":"silver"}},
                               {"custom_id":"anna","entry_properties":{"nested":[1]}},
                               {"custom_id":"zoe","trigger_properties":{}}]}
                """#, sink: sink)
        #expect(answer.status == .ok && answer.accepted == 2, "\(answer.json)")
        #expect(answer.problems == ["recipients[1].entry_properties.nested invalid_type", "recipients[2].trigger_properties unknown_field"])
        #expect(
            String(decoding: try #require(sink.records.first).value, as: UTF8.self)
                == #"{"v":1,"kind":"ingest","op":"journey_trigger","id":"j-1","project":"demo","source":"server","custom_id":"paul","received_at":"2026-11-18T11:06:40.000Z","journey":"onboarding","entry_properties":{"brand":"Demo","plan":"silver"}}"#)
        // (journey, status, error code, the problem at journey_id)
        let cases: [(String, Int, String, String?)] = [
            ("no-such-journey", 404, "unknown_journey", "unknown_journey"),
            ("welcome-series", 422, "validation_failed", "not_api_triggered"),
            ("paused", 409, "journey_disabled", "journey_disabled"),
            // A campaign's id is not a journey's.
            ("login-code", 404, "unknown_journey", "unknown_journey"),
        ]
        for (journey, status, code, problem) in cases {
            let refusedSink = FakeSink()
            let refused = try await call(
                "/v1/journeys/trigger", key: restKey, rest: true,
                body: #"{"journey_id":"\#(journey)","recipients":[{"custom_id":"paul"}]}"#, sink: refusedSink)
            #expect(refused.status.code == status && refused.code == code, "\(journey): \(refused.json)")
            #expect(refusedSink.records.isEmpty)
            #expect(refused.problems == (problem.map { ["journey_id \($0)"] } ?? []), "\(refused.json)")
        }
        let missing = try await call("/v1/journeys/trigger", key: restKey, rest: true, body: #"{"campaign_id":"onboarding","recipients":[{"custom_id":"p"}]}"#)
        #expect(missing.status == .unprocessableContent && missing.problems.contains("journey_id missing_field"), "\(missing.json)")
    }

    @Test("Prefer: handling=strict refuses a request with any problem whole (422, nothing stored); the default stores the rest")
    func strictHandling() async throws {
        let body = #"[{"identifiers":{"custom_id":"a"},"attributes":{"plan":"gold","bad name":1}},{"identifiers":{"custom_id":"b"},"attributes":{"x":1}}]"#
        let lenient = FakeSink()
        let stored = try await call("/v1/profiles/update", key: restKey, rest: true, body: body, sink: lenient)
        #expect(stored.status == .ok && stored.accepted == 2 && stored.problems == ["[0].attributes.bad name invalid_name"])
        #expect(stored.headers[HTTPField.Name("Preference-Applied")!] == nil)
        for prefer in ["handling=strict", "respond-async, Handling = Strict ;x=1", "wait=10,handling=strict"] {
            let strict = FakeSink()
            let refused = try await call(
                "/v1/profiles/update", key: restKey, rest: true, body: body, headers: [HTTPField.Name("Prefer")!: prefer], sink: strict)
            #expect(refused.status == .unprocessableContent && refused.problems == ["[0].attributes.bad name invalid_name"], "\(prefer)")
            #expect(refused.headers[HTTPField.Name("Preference-Applied")!] == "handling=strict")
            #expect(strict.records.isEmpty)
        }
        // An unknown field is a problem too; a strict request without any is stored whole.
        let unknown = try await call(
            "/v1/app/events", key: iosKey, body: #"{"installation_id":"I","events":[{"name":"open"}],"extra":1}"#,
            headers: [HTTPField.Name("Prefer")!: "handling=strict"])
        #expect(unknown.status == .unprocessableContent && unknown.problems == ["extra unknown_field"])
        let clean = FakeSink()
        let accepted = try await call(
            "/v1/app/events", key: iosKey, body: #"{"installation_id":"I","events":[{"name":"open"}]}"#,
            headers: [HTTPField.Name("Prefer")!: "handling=strict"], sink: clean)
        #expect(accepted.status == .ok && clean.records.count == 1)
        // Another preference is not strict handling.
        #expect(try await call(
            "/v1/profiles/update", key: restKey, rest: true, body: body, headers: [HTTPField.Name("Prefer")!: "handling=lenient"]).status == .ok)
    }

    @Test("ids: the client's, else derived from Idempotency-Key, else new; the request id is returned")
    func ids() async throws {
        let sink = FakeSink()
        let body = #"[{"identifiers":{"custom_id":"a"},"attributes":{"x":1}},{"identifiers":{"custom_id":"b"},"attributes":{"x":1}}]"#
        let answer = try await call(
            "/v1/profiles/update", key: restKey, rest: true, body: body,
            headers: [HTTPField.Name("Idempotency-Key")!: "batch-7", HTTPField.Name("X-Request-Id")!: "req-42"], sink: sink)
        #expect(sink.records.map(\.id) == ["batch-7:profile_update:0", "batch-7:profile_update:1"])
        // The same key on another endpoint is another write.
        let trigger = FakeSink()
        _ = try await call(
            "/v1/campaigns/trigger", key: restKey, rest: true,
            body: #"{"campaign_id":"login-code","recipients":[{"custom_id":"a"}]}"#,
            headers: [HTTPField.Name("Idempotency-Key")!: "batch-7"], sink: trigger)
        #expect(trigger.records.map(\.id) == ["batch-7:campaign_trigger:0"])
        // A key that cannot be used is refused, not ignored (the client would believe its retries deduplicated).
        for bad in [String(repeating: "k", count: 101), "", "with space", "caf\u{E9}"] {
            let refused = FakeSink()
            let answer = try await call(
                "/v1/profiles/update", key: restKey, rest: true, body: body, headers: [HTTPField.Name("Idempotency-Key")!: bad],
                sink: refused)
            #expect(answer.status == .badRequest && answer.code == "invalid_idempotency_key", "\(bad): \(answer.json)")
            #expect(refused.records.isEmpty)
        }
        #expect(answer.headers[HTTPField.Name("X-Request-Id")!] == "req-42")
        // Without either: a random id per request, then the index; two requests never share an id.
        let fresh = FakeSink()
        _ = try await call("/v1/profiles/update", key: restKey, rest: true, body: body, sink: fresh)
        _ = try await call("/v1/profiles/update", key: restKey, rest: true, body: body, sink: fresh)
        #expect(Set(fresh.records.map(\.id)).count == 4)
        for (index, record) in fresh.records.enumerated() {
            let parts = record.id.split(separator: ":")
            #expect(parts.count == 2 && UUID(uuidString: String(parts[0])) != nil && parts[1] == "\(index % 2)")
        }
    }
}

@Suite("Ingest API: app-side writes")
struct AppAPITests {
    @Test("identify and logout are keyed by the profile, or the installation when logging out")
    func identify() async throws {
        let sink = FakeSink()
        let identify = try await call(
            "/v1/app/identify", key: iosKey, body: #"{"installation_id":"INST-1","custom_id":"paul"}"#, sink: sink)
        #expect(identify.status == .ok)
        let logout = try await call(
            "/v1/app/identify", key: iosDevKey, body: #"{"installation_id":"INST-1","custom_id":null}"#, sink: sink)
        #expect(logout.status == .ok)
        #expect(sink.records.map(\.op) == [.identify, .logout])
        #expect(sink.records.map(\.key) == ["demo/paul", "demo/install/INST-1"])
        #expect(sink.records.map(\.source) == [.app(id: "demo-ios", dev: false), .app(id: "demo-ios", dev: true)])
        let missing = try await call("/v1/app/identify", key: iosKey, body: #"{"installation_id":"INST-1"}"#)
        #expect(missing.status == .unprocessableContent)
        #expect(missing.problems == ["custom_id missing_field"])
    }

    @Test("signed identity: a write naming a custom_id needs its proof; anonymous writes and logouts do not")
    func signedIdentity() async throws {
        let secrets = ["identity_secret_old_0001", "identity_secret_new_0002"]
        let text = #"{"projects":[{"id":"demo","rest_api_keys":[],"apps":[{"id":"demo-ios","platform":"ios","api_key":"\#(iosKey)","dev_api_key":"\#(iosDevKey)","require_signed_identity":true,"identity_secrets":["\#(secrets[0])","\#(secrets[1])"]}]}]}"#
        let catalog = try AppsCatalog.parse(Array(text.utf8))
        let sink = FakeSink()
        func write(_ uri: String, _ body: String, key: String = iosKey, proof: String?) async throws -> Answer {
            var headers: HTTPFields = [:]
            if let proof { headers[HTTPField.Name("X-CustomID-Auth")!] = proof }
            return try await call(uri, key: key, body: body, headers: headers, sink: sink, catalog: catalog, signed: false)
        }
        let identify = #"{"installation_id":"INST-1","custom_id":"paul"}"#
        let email = #"{"installation_id":"INST-1","custom_id":"paul","attributes":{"$email_address":"attacker@example.com"}}"#
        // Refused: no proof, a proof for another user, a proof for another key, a proof under an unknown secret.
        for (uri, body, proof, code) in [
            ("/v1/app/identify", identify, nil, "missing_custom_id_auth"),
            ("/v1/app/profile", email, nil, "missing_custom_id_auth"),
            ("/v1/app/identify", identify, CustomIDProof.make(apiKey: iosKey, customID: "paula", secret: secrets[1]), "invalid_custom_id_auth"),
            ("/v1/app/profile", email, CustomIDProof.make(apiKey: iosDevKey, customID: "paul", secret: secrets[1]), "invalid_custom_id_auth"),
            ("/v1/app/identify", identify, CustomIDProof.make(apiKey: iosKey, customID: "paul", secret: "identity_secret_xxx_0003"), "invalid_custom_id_auth"),
        ] as [(String, String, String?, String)] {
            let answer = try await write(uri, body, proof: proof)
            #expect(answer.status == .unauthorized && answer.code == code, "\(uri) \(String(describing: proof)): \(answer.json)")
        }
        #expect(sink.records.isEmpty)
        // Accepted: the proof under either secret (uppercase hex too), with the live or the dev key.
        let accepted = [
            try await write("/v1/app/identify", identify, proof: CustomIDProof.make(apiKey: iosKey, customID: "paul", secret: secrets[0])),
            try await write("/v1/app/profile", email, proof: CustomIDProof.make(apiKey: iosKey, customID: "paul", secret: secrets[1]).uppercased()),
            try await write(
                "/v1/app/events", #"{"installation_id":"INST-1","custom_id":"paul","events":[{"name":"open"}]}"#, key: iosDevKey,
                proof: CustomIDProof.make(apiKey: iosDevKey, customID: "paul", secret: secrets[0])),
            // Nothing to prove: an anonymous installation's write, a logout; they are flagged unsigned.
            try await write("/v1/app/events", #"{"installation_id":"INST-2","events":[{"name":"open"}]}"#, proof: nil),
            try await write("/v1/app/identify", #"{"installation_id":"INST-1","custom_id":null}"#, proof: nil),
            // A logout naming the user it logs out from, with that user's proof: not unsigned.
            try await write(
                "/v1/app/identify", #"{"installation_id":"INST-1","custom_id":null,"from_custom_id":"paul"}"#,
                proof: CustomIDProof.make(apiKey: iosKey, customID: "paul", secret: secrets[0])),
        ]
        #expect(accepted.map(\.status) == [.ok, .ok, .ok, .ok, .ok, .ok], "\(accepted.map(\.json))")
        #expect(sink.records.map(\.op) == [.identify, .profileUpdate, .event, .event, .logout, .logout])
        #expect(sink.records.map(\.unsigned) == [false, false, false, true, true, false])
        #expect(sink.records.last?.payload == .logout(fromCustomID: "paul"))
        // A logout's from_custom_id is proven like a custom_id.
        for proof in [nil, CustomIDProof.make(apiKey: iosKey, customID: "paula", secret: secrets[0])] {
            let answer = try await write("/v1/app/identify", #"{"installation_id":"INST-1","custom_id":null,"from_custom_id":"paul"}"#, proof: proof)
            #expect(answer.status == .unauthorized, "\(answer.json)")
        }
        let both = try await write(
            "/v1/app/identify", #"{"installation_id":"INST-1","custom_id":"paul","from_custom_id":"paul"}"#,
            proof: CustomIDProof.make(apiKey: iosKey, customID: "paul", secret: secrets[0]))
        #expect(both.status.code == 422 && both.problems == ["from_custom_id unexpected_field"])
        // The same writes for an app that says "require_signed_identity": false need no proof, and are not flagged.
        let legacy = FakeSink()
        #expect(try await call("/v1/app/profile", key: iosKey, body: email, sink: legacy, catalog: legacyCatalog(), signed: false).status == .ok)
        #expect(try await call("/v1/app/events", key: iosKey, body: #"{"installation_id":"INST-2","events":[{"name":"open"}]}"#, sink: legacy, catalog: legacyCatalog()).status == .ok)
        #expect(legacy.records.map(\.unsigned) == [false, false])
    }

    @Test("signed identity is the default: an app key alone cannot write a user's email, consent or attach an installation to them (issue 33's probe)")
    func signedByDefault() async throws {
        let sink = FakeSink()
        // The attack of the probe: the public app key, a victim's custom ID, an email and a consent.
        let attack = try await call(
            "/v1/app/profile", key: iosKey,
            body: #"{"installation_id":"AAAAAAAA-0000-4000-8000-000000000001","custom_id":"victim1","attributes":{"$email_address":"evil@example.com","$email_marketing":"subscribed"}}"#,
            sink: sink, signed: false)
        #expect(attack.status == .unauthorized && attack.code == "missing_custom_id_auth", "\(attack.json)")
        let identify = try await call(
            "/v1/app/identify", key: androidKey, body: #"{"installation_id":"AAAAAAAA-0000-4000-8000-000000000001","custom_id":"victim1"}"#,
            sink: sink, signed: false)
        #expect(identify.status == .unauthorized)
        // Without a custom ID, email and phone were never writable; natives and attributes go to the anonymous profile.
        let anonymous = try await call(
            "/v1/app/profile", key: iosKey,
            body: #"{"installation_id":"AAAAAAAA-0000-4000-8000-000000000001","attributes":{"$email_address":"evil@example.com","plan":"x"}}"#,
            sink: sink, signed: false)
        #expect(anonymous.problems == ["attributes.$email_address not_identified"], "\(anonymous.json)")
        #expect(sink.records.count == 1 && sink.records[0].unsigned && sink.records[0].key == "demo/install/AAAAAAAA-0000-4000-8000-000000000001")
    }

    @Test("installation-scoped profile edits: email needs an identified user")
    func profile() async throws {
        let sink = FakeSink()
        let answer = try await call(
            "/v1/app/profile", key: iosKey,
            body: #"{"installation_id":"I","attributes":{"$email_address":"a@b.co","$language":"EN","tier":"gold"}}"#,
            sink: sink)
        #expect(answer.status == .ok)
        #expect(answer.problems == ["attributes.$email_address not_identified"])
        #expect(
            String(decoding: try #require(sink.records.first).json["profile"]!.serialized, as: UTF8.self)
                == #"{"language":"en","custom_attributes":{"tier.s":"gold"}}"#)
    }

    @Test("events: one record each; an invalid event is dropped whole, the others stored")
    func events() async throws {
        let sink = FakeSink()
        let answer = try await call(
            "/v1/app/events", key: iosKey,
            body: #"""
                {"installation_id":"I","custom_id":"paul","events":[
                  {"name":"open","id":"e-1"},{"name":"buy","attributes":{"a":"","b":[1,"x"]}},{"name":"view","time":"2026-11-22T10:00:00+01:00"}]}
                """#, sink: sink)
        #expect(answer.status == .ok)
        #expect(answer.accepted == 2)
        #expect(answer.problems == ["events[1].attributes.a empty_string", "events[1].attributes.b mixed_array"])
        #expect(sink.records.map(\.op) == [.event, .event])
        #expect(sink.records.first?.id == "e-1")
        #expect(sink.records.map(\.key) == ["demo/paul", "demo/paul"])
        let view = try #require(sink.records.last?.json["event"])
        #expect(view["time"] == .string("2026-11-22T09:00:00.000Z"))
    }

    @Test("hostile sizes: an object past 1,000 members refused while parsing; at the cap, duplicates resolved and caps checked first; problems kept up to 100 and counted")
    func hostileSizes() async throws {
        // 140,000 names in one object (once answered after 36 s, then in linear time): refused by the parser itself.
        let huge = (0..<140_000).map { #""a\#($0)":1"# }.joined(separator: ",")
        let parsed = try await call(
            "/v1/app/profile", key: iosKey, body: #"{"installation_id":"I","attributes":{\#(huge)}}"#, maxBody: 8 << 20)
        #expect(parsed.status == .badRequest && parsed.code == "body_too_complex", "\(parsed.json)")
        let longArray = "[" + Array(repeating: "1", count: 10_001).joined(separator: ",") + "]"
        let array = try await call("/v1/profiles/update", key: restKey, rest: true, body: longArray, maxBody: 8 << 20)
        #expect(array.status == .badRequest && array.code == "body_too_complex")

        // At the cap: names given twice (the second, in capitals, wins): every one kept once, in the order of its last write.
        let names = 499
        let twice = (0..<names).map { #""a\#($0)":1"# }.joined(separator: ",") + "," + (0..<names).map { #""A\#($0)":2"# }.joined(separator: ",")
        let sink = FakeSink()
        let kept = try await call(
            "/v1/app/profile", key: iosKey, body: #"{"installation_id":"I","attributes":{\#(twice)}}"#, sink: sink, maxBody: 8 << 20)
        #expect(kept.status == .ok)
        guard case .object(let attributes)? = try #require(sink.records.first).json["profile"]?["custom_attributes"] else {
            Issue.record("no custom attributes")
            return
        }
        #expect(attributes.count == names)
        #expect(attributes.first == JSONMember("a0.i", .number("2")) && attributes.last == JSONMember("a\(names - 1).i", .number("2")))

        // 200 updates of 999 invalid names each: 199,800 problems, 100 listed, the rest counted (and only counted: a
        // request's problems are kept up to what its answer lists).
        let invalid = (0..<999).map { #""bad-\#($0)":1"# }.joined(separator: ",")
        let updates = (0..<200).map { #"{"identifiers":{"custom_id":"u\#($0)"},"attributes":{\#(invalid)}}"# }.joined(separator: ",")
        let refused = try await call("/v1/profiles/update", key: restKey, rest: true, body: "[\(updates)]", maxBody: 8 << 20)
        #expect(refused.status == .unprocessableContent)
        #expect(refused.problems.count == 100 && refused.problems.first == "[0].attributes.bad-0 invalid_name")
        #expect(refused.json["error"]?["details_omitted"] == .number("199700"))

        // An event over the 20-attribute cap is refused by the cap alone, not by 999 value checks.
        let many = (0..<999).map { #""k\#($0)":"x""# }.joined(separator: ",")
        let event = try await call(
            "/v1/app/events", key: iosKey, body: #"{"installation_id":"I","events":[{"name":"e","attributes":{\#(many)}}]}"#,
            maxBody: 8 << 20)
        #expect(event.status == .unprocessableContent)
        #expect(event.problems == ["events[0].attributes too_many_attributes"])
        #expect(event.json["error"]?["details_omitted"] == nil)
    }

    @Test("a request's problems are kept up to what its answer lists, and all counted (by code for the metric)")
    func problemList() {
        var list = ProblemList()
        for index in 0..<250 { list.append(Problem(path: "p\(index)", code: index % 2 == 0 ? "even" : "odd", message: "m")) }
        var other = ProblemList()
        other += [Problem(path: "q", code: "odd", message: "m")]
        list += other
        #expect(list.count == 251 && list.kept.count == 100 && list.kept.last?.path == "p99")
        #expect(list.counts == ["even": 125, "odd": 126])
        #expect(list.reported.omitted == 151)
    }

    @Test("push tokens: APNs hex normalised for iOS apps, opaque for Android; environment required")
    func pushTokens() async throws {
        let sink = FakeSink()
        let hex = String(repeating: "AB", count: 32)
        let ios = try await call(
            "/v1/app/push-token", key: iosKey, body: #"{"installation_id":"I","token":"\#(hex)","environment":"sandbox"}"#,
            sink: sink)
        #expect(ios.status == .ok)
        #expect(sink.records.first?.json["push"]?["token"] == .string(hex.lowercased()))
        let android = try await call(
            "/v1/app/push-token", key: androidKey, body: #"{"installation_id":"I","token":"fcm:abc-123","environment":"production"}"#,
            sink: sink)
        #expect(android.status == .ok)
        for body in [
            #"{"installation_id":"I","token":"xyz","environment":"sandbox"}"#,
            #"{"installation_id":"I","token":"\#(hex)","environment":"prod"}"#,
            #"{"installation_id":"I","token":"\#(hex)0","environment":"sandbox"}"#,
        ] {
            let refused = try await call("/v1/app/push-token", key: iosKey, body: body)
            #expect(refused.status == .unprocessableContent, "\(body)")
        }
    }

    @Test("installation data: each field on its own; the device model only with consent")
    func installation() async throws {
        let sink = FakeSink()
        let answer = try await call(
            "/v1/app/installation", key: iosKey,
            body: #"""
                {"installation_id":"I","app_version":"3.2.1","os_version":"18.1","detected_language":"fr","detected_region":"be",
                 "timezone":"Europe/Brussels","notification_permission":"maybe","data_collection":{"geoip":true,"device_model":false},
                 "device_model":"iPhone17,1","device_brand":"Apple","battery":12}
                """#, sink: sink)
        #expect(answer.status == .ok)
        #expect(answer.problems == ["battery unknown_field", "device_model not_collected", "notification_permission invalid_value"])
        #expect(
            String(decoding: try #require(sink.records.first?.json["installation"]).serialized, as: UTF8.self)
                == #"{"data_collection":{"geoip":true,"device_model":false},"app_version":"3.2.1","detected_language":"fr","detected_region":"BE","device_brand":"Apple","os_version":"18.1","timezone":"Europe/Brussels"}"#
        )
    }

    @Test(
        "location: latitude and longitude in range",
        arguments: [
            (#"{"installation_id":"I","latitude":48.85,"longitude":2.35}"#, 200),
            (#"{"installation_id":"I","latitude":90,"longitude":-180,"accuracy":5}"#, 200),
            (#"{"installation_id":"I","latitude":90.1,"longitude":0}"#, 422),
            (#"{"installation_id":"I","latitude":0,"longitude":180.5}"#, 422),
            (#"{"installation_id":"I","latitude":"48","longitude":2}"#, 422),
            (#"{"installation_id":"I","longitude":2}"#, 422),
        ])
    func location(body: String, status: Int) async throws {
        let answer = try await call("/v1/app/location", key: iosKey, body: body)
        #expect(answer.status.code == status, "\(answer.problems)")
    }

    @Test("opt-out, opt-in and wipe become records of their own")
    func privacy() async throws {
        let sink = FakeSink()
        for path in ["opt-out", "opt-in", "wipe"] {
            let answer = try await call("/v1/app/\(path)", key: iosKey, body: #"{"installation_id":"I"}"#, sink: sink)
            #expect(answer.status == .ok)
        }
        #expect(sink.records.map(\.op) == [.optOut, .optIn, .wipe])
        #expect(sink.records.allSatisfy { $0.key == "demo/install/I" })
    }

    @Test(
        "the installation and custom ID are checked before anything is stored",
        arguments: [
            (#"{"custom_id":"paul"}"#, "installation_id missing_field"),
            (#"{"installation_id":"has space"}"#, "installation_id invalid_installation_id"),
            (#"{"installation_id":"I","custom_id":"nan"}"#, "custom_id invalid_custom_id"),
            // Another user's installation home, reached through a custom ID: refused.
            (#"{"installation_id":"I","custom_id":"install/J"}"#, "custom_id invalid_custom_id"),
            (#"{"installation_id":"I","custom_id":5}"#, "custom_id invalid_type"),
        ])
    func envelope(body: String, problem: String) async throws {
        let answer = try await call("/v1/app/opt-out", key: iosKey, body: body)
        #expect(answer.status == .unprocessableContent)
        #expect(answer.problems.contains(problem), "\(answer.problems)")
    }
}

/// Holds every write until `open()`: requests stay in flight, as while Kafka is slow to acknowledge.
final class GatedSink: RecordSink {
    let gate = Gate()
    var waiting: Locked<Int> { gate.waiting }

    func store(_ records: [IngestRecord], requestID: String) async throws { await gate.wait() }
    func open() { gate.open() }

    func answeredBeforeOpening<T: Sendable>(_ request: @escaping @Sendable () async throws -> T) async throws -> T? {
        try await gate.answeredBeforeOpening(request)
    }
}

@Suite("Ingest API: bounded", .timeLimit(.minutes(5)))
struct BoundedTests {
    @Test("beyond the requests in flight allowed, 503 overloaded with Retry-After, before the body is read; the others complete")
    func inFlightCap() async throws {
        let sink = GatedSink()
        let catalog = try AppsCatalog.load(path: sampleAppsFile)
        let router = Ingest.buildRouter(
            api: IngestAPI(catalog: catalog, sink: sink, maxBodyBytes: 1 << 20, now: { fixedNow }), maxInFlight: 2)
        let app = Application(router: router, logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }))
        let body = #"{"installation_id":"I","events":[{"name":"open"}]}"#
        try await app.test(.router) { client in
            @Sendable func post() async throws -> (HTTPResponse.Status, String?) {
                try await client.execute(
                    uri: "/v1/app/events", method: .post, headers: [HTTPField.Name("X-Api-Key")!: iosKey],
                    body: ByteBuffer(string: body)
                ) { ($0.status, $0.headers[.retryAfter]) }
            }
            async let first = post()
            async let second = post()
            try await waitUntil("two requests in flight") { sink.waiting.withLock { $0 } == 2 }
            // The third is answered at once (without the cap it would wait with the others: the gate opens after 10 s).
            let third = try await sink.answeredBeforeOpening { try await post() }
            #expect(third?.0 == .serviceUnavailable && third?.1 == "1", "\(String(describing: third))")
            sink.open()
            #expect(try await first.0 == .ok)
            #expect(try await second.0 == .ok)
            // Room again once they are done.
            #expect(try await post().0 == .ok)
        }
    }

    @Test("bodies in flight are counted in bytes too: past the budget, 503 before the body is read; one request always gets in")
    func inFlightBytes() async throws {
        let sink = GatedSink()
        let catalog = try AppsCatalog.load(path: sampleAppsFile)
        let router = Ingest.buildRouter(
            api: IngestAPI(catalog: catalog, sink: sink, maxBodyBytes: 1 << 20, now: { fixedNow }), maxInFlight: 100,
            maxInFlightBytes: 2_500)
        let app = Application(router: router, logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }))
        // About 1,000 bytes each: two fit in 2,500, a third does not.
        let padding = String(repeating: "x", count: 300)
        let body = #"{"installation_id":"I","events":[{"name":"open","attributes":{"a":"\#(padding)","b":"\#(padding)","c":"\#(padding)"}}]}"#
        try await app.test(.router) { client in
            @Sendable func post(_ body: String) async throws -> (HTTPResponse.Status, String?) {
                try await client.execute(
                    uri: "/v1/app/events", method: .post,
                    headers: [HTTPField.Name("X-Api-Key")!: iosKey, .contentLength: "\(body.utf8.count)"],
                    body: ByteBuffer(string: body)
                ) { ($0.status, $0.headers[.retryAfter]) }
            }
            async let first = post(body)
            async let second = post(body)
            try await waitUntil("two requests in flight") { sink.waiting.withLock { $0 } == 2 }
            // Answered at once (without the byte budget it would wait with the others: the gate opens after 10 s).
            let third = try await sink.answeredBeforeOpening { try await post(body) }
            #expect(third?.0 == .serviceUnavailable && third?.1 == "1", "\(String(describing: third))")
            sink.open()
            #expect(try await first.0 == .ok)
            #expect(try await second.0 == .ok)
            #expect(try await post(body).0 == .ok)
        }
        // Alone, a body larger than the budget is taken (the body limit still applies).
        let lone = Ingest.buildRouter(
            api: IngestAPI(catalog: catalog, sink: FakeSink(), maxBodyBytes: 1 << 20, now: { fixedNow }), maxInFlightBytes: 100)
        try await Application(router: lone, logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })).test(.router) { client in
            let status = try await client.execute(
                uri: "/v1/app/events", method: .post, headers: [HTTPField.Name("X-Api-Key")!: iosKey, .contentLength: "\(body.utf8.count)"],
                body: ByteBuffer(string: body)
            ) { $0.status }
            #expect(status == .ok)
        }
    }

    /// A gzip body of a few KiB inflates to up to the body limit (Segment's and RudderStack's libraries compress
    /// theirs), and is parsed to several times that: counting its compressed bytes let a flood of them past the budget.
    @Test("a gzip body counts what it inflates to: past the budget, 503 once inflated")
    func inFlightInflatedBytes() async throws {
        let sink = GatedSink()
        let router = Ingest.buildRouter(
            api: IngestAPI(catalog: try legacyCatalog(), sink: sink, maxBodyBytes: 1 << 20, now: { fixedNow }), maxInFlight: 100,
            maxInFlightBytes: 100_000)
        let app = Application(router: router, logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }))
        // About 60 KB of JSON each, a few hundred bytes compressed: one fits in 100,000, two do not.
        let padding = String(repeating: "x", count: 60_000)
        var plain = ByteBuffer(string: #"{"batch":[{"type":"track","anonymousId":"a","event":"Opened","properties":{"p":"\#(padding)"},"messageId":"m"}]}"#)
        let compressed = Array(try plain.compress(with: .gzip).readableBytesView)
        #expect(compressed.count < 1_000)
        try await app.test(.router) { client in
            @Sendable func post() async throws -> (HTTPResponse.Status, String?) {
                var headers = basic(writeKey)
                headers[.contentEncoding] = "gzip"
                headers[.contentLength] = "\(compressed.count)"
                return try await client.execute(uri: "/v1/batch", method: .post, headers: headers, body: ByteBuffer(bytes: compressed)) {
                    ($0.status, $0.headers[.retryAfter])
                }
            }
            async let first = post()
            try await waitUntil("a request in flight") { sink.waiting.withLock { $0 } == 1 }
            // Compressed, both fit; inflated, the second does not (without the count it would wait: the gate opens after 10 s).
            let second = try await sink.answeredBeforeOpening { try await post() }
            #expect(second?.0 == .serviceUnavailable && second?.1 == "1", "\(String(describing: second))")
            sink.open()
            #expect(try await first.0 == .ok)
            #expect(try await post().0 == .ok)
        }
    }
}
