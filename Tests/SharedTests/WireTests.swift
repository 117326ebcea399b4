import Foundation
import Shared
import Testing

@Suite("Wire format")
struct WireTests {
    static let record = KafkaRecord(
        topic: "herald.ingest", partition: 3, offset: 42, key: Array("acme/paul".utf8),
        value: Array(#"{"v":9}"#.utf8), headers: [], timestampMs: nil)
    static let at = Date(timeIntervalSince1970: 1_795_000_000.123)

    /// Changing this string is changing the format on the topics: make it a visible decision.
    @Test("dead letter golden JSON")
    func deadLetterGolden() throws {
        let letter = DeadLetter(service: "orchestrator", reason: "unsupported version", record: Self.record, at: Self.at)
        let json = String(decoding: try Wire.encode(letter), as: UTF8.self)
        #expect(
            json
                == #"{"at":"2026-11-18T11:06:40.123Z","encoding":"utf8","key":"acme/paul","kind":"dead_letter","offset":42,"partition":3,"reason":"unsupported version","service":"orchestrator","topic":"herald.ingest","v":1,"value":"{\"v\":9}"}"#
        )
        let decoded = try Wire.decode(DeadLetter.self, from: Array(json.utf8))
        #expect(decoded.reason == letter.reason && decoded.offset == 42)
        #expect(String(decoding: try Wire.encode(decoded), as: UTF8.self) == json, "decode then encode is lossless")
    }

    @Test("send request golden JSON: the orchestrator writes it and the notifier reads it with the same type")
    func sendRequestGolden() throws {
        var send = SendRequest(
            sendID: "0f1e2d3c4b5a69788796a5b4c3d2e1f0", project: "acme", profileKey: "acme/paul", customID: "paul",
            channel: .push, marketing: true, app: "acme-ios", campaign: "cart", step: "message-0", occurrence: "evt-1",
            template: "cart", language: "fr", content: ["title": "Votre panier", "body": "Bonjour"],
            payload: ["deeplink": "acme://cart"],
            trigger: .init(type: .event, eventName: "ADD_TO_CART", eventID: "evt-1", at: Self.at),
            decidedAt: Self.at + 1, expiresAt: Self.at + 3600)
        send.dueAt = Self.at
        send.requestID = "req-1"
        send.contactRevision = 3
        let json = String(decoding: try Wire.encode(send), as: UTF8.self)
        #expect(json == Self.sendGolden, "\(json)")
        let decoded = try Wire.decode(SendRequest.self, from: Array(json.utf8))
        #expect(decoded.sendID == send.sendID && decoded.content == send.content && decoded.trigger.eventID == "evt-1")
        #expect(decoded.contactRevision == 3)
        #expect(String(decoding: try Wire.encode(decoded), as: UTF8.self) == json, "decode then encode is lossless")
    }

    static let sendGolden =
        #"{"app":"acme-ios","campaign":"cart","channel":"push","contact_revision":3,"content":{"body":"Bonjour","title":"Votre panier"},"custom_id":"paul","decided_at":"2026-11-18T11:06:41.123Z","due_at":"2026-11-18T11:06:40.123Z","expires_at":"2026-11-18T12:06:40.123Z","kind":"send","language":"fr","marketing":true,"occurrence":"evt-1","payload":{"deeplink":"acme://cart"},"profile_key":"acme/paul","project":"acme","request_id":"req-1","send_id":"0f1e2d3c4b5a69788796a5b4c3d2e1f0","step":"message-0","template":"cart","trigger":{"at":"2026-11-18T11:06:40.123Z","event_id":"evt-1","event_name":"ADD_TO_CART","type":"event"},"v":1}"#

    @Test("contact snapshot golden JSON; nulls and missing channels or flags read as absent")
    func contactGolden() throws {
        let snapshot = ContactSnapshot(
            project: "demo", customID: "paul",
            email: .init(address: "paul@example.com", marketing: "subscribed", marketingChangedAt: Self.at),
            sms: .init(phoneNumber: "+33612345678"),
            installations: [
                .init(
                    installationID: "I-1", app: "demo-ios", token: "ab12", environment: .production,
                    notificationPermission: "allowed", pushReachable: true)
            ],
            updatedAt: Self.at, revision: 7)
        let json = String(decoding: try Wire.encode(snapshot), as: UTF8.self)
        #expect(
            json
                == #"{"custom_id":"paul","email":{"address":"paul@example.com","marketing":"subscribed","marketing_changed_at":"2026-11-18T11:06:40.123Z"},"installations":[{"app":"demo-ios","dev":false,"environment":"production","installation_id":"I-1","notification_permission":"allowed","opted_out":false,"push_reachable":true,"token":"ab12"}],"kind":"contact","project":"demo","revision":7,"sms":{"phone_number":"+33612345678"},"updated_at":"2026-11-18T11:06:40.123Z","v":1}"#
        )
        let decoded = try Wire.decode(ContactSnapshot.self, from: Array(json.utf8))
        #expect(decoded.installations == snapshot.installations && decoded.sms == snapshot.sms)
        #expect(String(decoding: try Wire.encode(decoded), as: UTF8.self) == json, "decode then encode is lossless")
        let sparse = #"{"v":1,"kind":"contact","project":"demo","custom_id":null,"email":null,"installations":[{"installation_id":"I-2","token":null}]}"#
        let read = try Wire.decode(ContactSnapshot.self, from: Array(sparse.utf8))
        #expect(read.email == .init() && read.sms == .init() && read.customID == nil && read.revision == 0)
        #expect(read.installations.first.map { !$0.dev && !$0.optedOut && !$0.pushReachable && $0.token == nil } == true)
    }

    @Test("delivery report golden JSON: the target is a field")
    func deliveryGolden() throws {
        var report = DeliveryReport(
            id: "s1/I-1/sent", sendID: "s1", project: "demo", customID: "paul", installationID: "I-1", channel: .push,
            outcome: .sent, token: "ab12", at: Self.at)
        report.targetID = "I-1"
        report.profileKey = "demo/paul"
        report.attempts = 1
        let json = String(decoding: try Wire.encode(report), as: UTF8.self)
        #expect(
            json
                == #"{"at":"2026-11-18T11:06:40.123Z","attempts":1,"channel":"push","custom_id":"paul","id":"s1/I-1/sent","installation_id":"I-1","kind":"delivery","outcome":"sent","profile_key":"demo/paul","project":"demo","send_id":"s1","target_id":"I-1","token":"ab12","v":1}"#
        )
        let decoded = try Wire.decode(DeliveryReport.self, from: Array(json.utf8))
        #expect(decoded.targetID == "I-1" && decoded.channel == .push)
        #expect(String(decoding: try Wire.encode(decoded), as: UTF8.self) == json, "decode then encode is lossless")
    }

    @Test("profile keys: a custom ID's profile, an installation's home, a token's owner; none collides with another")
    func profileKeys() {
        #expect(ProfileKey.of("demo", customID: "paul", installationID: "I-1") == "demo/paul")
        #expect(ProfileKey.of("demo", customID: nil, installationID: "I-1") == "demo/install/I-1")
        #expect(ProfileKey.token("demo", "ab12") == "demo/token/ab12")
        #expect(ProfileKey.project(of: "demo/install/I-1") == "demo")
        #expect(ProfileKey.collides(customID: "install/I-1") && ProfileKey.collides(customID: "token/ab12"))
        #expect(!ProfileKey.collides(customID: "paul/install/I-1"))
    }

    @Test("ingest record golden JSON: the ingest writes it and the orchestrator reads it with the same type")
    func ingestGolden() throws {
        var record = IngestRecord(
            .event(ValidatedEvent(name: "APP_OPEN", attributes: [])), id: "e-1", project: "demo",
            source: .app(id: "demo-ios", dev: false), customID: "paul", installationID: "I-1", receivedAt: Self.at)
        let json = String(decoding: record.value, as: UTF8.self)
        #expect(
            json
                == #"{"v":1,"kind":"ingest","op":"event","id":"e-1","project":"demo","source":"app","app":"demo-ios","dev":false,"custom_id":"paul","installation_id":"I-1","received_at":"2026-11-18T11:06:40.123Z","event":{"name":"APP_OPEN","attributes":{}}}"#
        )
        #expect(String(decoding: try IngestRecord.read(Array(json.utf8)).value, as: UTF8.self) == json, "read then written is lossless")
        // Forwarded by the orchestrator to the installation's home: the same id, the hop counted.
        record.customID = nil
        record.forwarded = true
        record.hops = 2
        let forwarded = try IngestRecord.read(record.value)
        #expect(forwarded.key == "demo/install/I-1" && forwarded.forwarded && forwarded.hops == 2 && forwarded.id == "e-1")
        #expect(forwarded.source == .app(id: "demo-ios", dev: false) && forwarded.payload == record.payload)
        let refused = #expect(throws: WireError.self) {
            try IngestRecord.read(Array(#"{"v":1,"kind":"ingest","op":"event","id":"x","project":"demo","source":"app","received_at":"2026-11-18T11:06:40Z"}"#.utf8))
        }
        #expect(refused?.reason == "an app write without app")
    }

    @Test("binary originals are kept as base64")
    func binary() throws {
        var record = Self.record
        record.value = [0xff, 0x00]
        let letter = DeadLetter(service: "s", reason: "r", record: record, at: Self.at)
        #expect(letter.encoding == "base64")
        #expect(letter.value == "/wA=")
        #expect(letter.key == Data("acme/paul".utf8).base64EncodedString())
    }

    @Test(
        "decoding refuses what it cannot read, saying why",
        arguments: [
            (#"not json"#, "not a Herald message"),
            (#"{"kind":"dead_letter"}"#, "not a Herald message"),
            (#"{"v":1,"kind":"event"}"#, #"expected kind "dead_letter", got "event""#),
            (#"{"v":2,"kind":"dead_letter"}"#, "dead_letter version 2 is not supported"),
            (#"{"v":0,"kind":"dead_letter"}"#, "dead_letter version 0 is not supported"),
            (#"{"v":1,"kind":"dead_letter","service":"s"}"#, "missing field reason"),
        ])
    func refused(json: String, reason: String) {
        let error = #expect(throws: WireError.self) { try Wire.decode(DeadLetter.self, from: Array(json.utf8)) }
        #expect(error?.reason.contains(reason) == true, "\(error?.reason ?? "")")
    }

    @Test("times are UTC with milliseconds; whole seconds are read too")
    func times() {
        #expect(WireTime.format(Self.at) == "2026-11-18T11:06:40.123Z")
        #expect(WireTime.parse("2026-11-18T11:06:40.123Z").map(WireTime.format) == "2026-11-18T11:06:40.123Z")
        #expect(WireTime.format(Date(timeIntervalSince1970: -0.5)) == "1969-12-31T23:59:59.500Z")
        #expect(WireTime.parse("2026-11-18T11:06:40Z") == Date(timeIntervalSince1970: 1_795_000_000))
        #expect(WireTime.parse("18/11/2026") == nil)
    }

    /// `Wire.encode` writes with `WireEncoder`; Foundation's `JSONEncoder` with the wire settings is the reference. Every
    /// message type, with escapes, non-ASCII text, absent and present optionals, nested objects and arrays.
    @Test("a time leaves the store as the wire writes it: in a name, in JSON, compared as stored, by the day")
    func timesAtTheWire() throws {
        // A sub-millisecond time and its text read back are the same stored instant, though not the same Date.
        let written = Date(timeIntervalSince1970: 1_795_000_000.123_4)
        let read = try #require(WireTime.parse(WireTime.format(written)))
        #expect(written != read)
        #expect(WireTime.same(written, read) && WireTime.rounded(written) == read)
        #expect(!WireTime.same(written, read.addingTimeInterval(0.001)) && !WireTime.same(written, nil) && WireTime.same(nil, nil))
        // In a name: the wire's text, not Foundation's description ("2026-11-18 11:06:40 +0000").
        #expect("schedule \(wire: written)" == "schedule 2026-11-18T11:06:40.123Z")
        #expect(WireTime.day(written) == "2026-11-18")
        // In JSON, and back.
        #expect(JSONValue.time(written) == .string("2026-11-18T11:06:40.123Z"))
        #expect(JSONValue.time(written).timeValue == read && JSONValue.string("18/11/2026").timeValue == nil)
        // Times no real record carries, but a computation from data might: written (nonsense, not a trap).
        for extreme in [Double.infinity, -Double.infinity, Double.nan, 1e300, -1e300, 9.3e15] {
            #expect(!WireTime.format(Date(timeIntervalSince1970: extreme)).isEmpty)
            #expect(WireTime.same(Date(timeIntervalSince1970: extreme), Date(timeIntervalSince1970: extreme)))
        }
    }

    @Test("the wire encoder writes exactly what Foundation's JSONEncoder writes")
    func encoderMatchesFoundation() throws {
        let odd = "tab\tquote\"back\\slash/ é 😀 \u{01}\u{1f}\n\r"
        var record = Self.record
        record.value = Array(odd.utf8)
        let letter = DeadLetter(service: odd, reason: "", record: record, at: Date(timeIntervalSince1970: -12.5))
        try expectSame(letter)
        var send = SendRequest(
            sendID: "s", project: "acme", profileKey: "acme/paul", customID: nil, channel: .email, marketing: false,
            app: nil, campaign: "c", step: "message-1", occurrence: odd, template: "t", language: "en",
            content: ["subject": odd, "html": "<p>\(odd)</p>"], payload: [:],
            trigger: .init(type: .api, eventID: "e", at: Self.at), decidedAt: Self.at, expiresAt: nil)
        try expectSame(send)
        send.dueAt = Self.at + 2
        send.requestID = odd
        try expectSame(send)
        // A typed custom payload: numbers, booleans, null inside, lists and mappings (whose keys come out sorted).
        send.payload = [
            "screen": .string(odd), "count": .number("3"), "score": .number("0.25"), "vip": .bool(true),
            "tags": .array([.string("a"), .number("-2"), .null]),
            "product": .object([JSONMember("sku", .string("X1")), JSONMember("price", .number("19.5")), JSONMember("a", .bool(false))]),
        ]
        send.notBefore = Self.at + 60
        let typed = String(decoding: try Wire.encode(send), as: UTF8.self)
        #expect(typed.contains(#""payload":{"count":3,"product":{"a":false,"price":19.5,"sku":"X1"},"score":0.25,"#), "\(typed)")
        #expect(String(decoding: try Wire.encodeWithFoundation(send), as: UTF8.self) == typed)
        // Read back, a mapping keeps the order it was written in (sorted): the same value.
        var sorted = send
        sorted.payload?["product"] = .object([JSONMember("a", .bool(false)), JSONMember("price", .number("19.5")), JSONMember("sku", .string("X1"))])
        #expect(try Wire.decode(SendRequest.self, from: Array(typed.utf8)) == sorted)
        #expect(try Wire.decodeWithFoundation(SendRequest.self, from: Array(typed.utf8)) == sorted)
        try expectSame(
            ContactSnapshot(
                project: "demo", customID: odd, email: .init(address: odd, bouncedAt: Self.at),
                installations: [
                    .init(installationID: "I-1", app: nil, token: nil, environment: nil, notificationPermission: nil, pushReachable: false),
                    .init(installationID: "I-2", app: "a", dev: true, token: "t", environment: .sandbox, notificationPermission: "provisional",
                        optedOut: true, pushReachable: false),
                ]))
        try expectSame(ContactSnapshot(project: "demo", customID: nil))
        try expectSame(
            DeliveryReport(
                id: "d", sendID: "s", project: "p", customID: nil, installationID: "i", channel: .push, outcome: .failed,
                reason: odd, token: "t", at: Self.at))

        func expectSame<M: WireMessage>(_ message: M) throws {
            let ours = String(decoding: try Wire.encode(message), as: UTF8.self)
            let foundation = String(decoding: try Wire.encodeWithFoundation(message), as: UTF8.self)
            #expect(ours == foundation)
            #expect(try Wire.decode(M.self, from: Array(ours.utf8)) == message)
        }
    }

    /// The hand-written format and parse (the hot path's) against Foundation's ISO-8601 style over 20,000 instants from
    /// 1900 to 2200, leap days and month ends included, with fractions of every length.
    @Test("hand-written times agree with Foundation's ISO-8601")
    func timesAgreeWithFoundation() throws {
        let foundation = Date.ISO8601FormatStyle(includingFractionalSeconds: true, timeZone: .gmt)
        var generator = SystemRandomNumberGenerator()
        let edges: [Int64] = [
            -2_208_988_800_000, 951_782_400_000, 951_868_799_999, 4_107_542_399_999, 1_709_164_800_000, 0, -1,
        ]
        let instants = edges + (0..<20_000).map { _ in Int64.random(in: -2_208_988_800_000...7_258_118_400_000, using: &generator) }
        for milliseconds in instants {
            let date = Date(timeIntervalSince1970: Double(milliseconds) / 1000)
            let text = WireTime.format(date)
            let reference = try foundation.parse(text)
            #expect(Int64((reference.timeIntervalSince1970 * 1000).rounded()) == milliseconds, "\(text)")
            #expect(WireTime.parse(text).map(WireTime.format) == text)
            #expect(abs((WireTime.parse(text)?.timeIntervalSince1970 ?? 0) - reference.timeIntervalSince1970) < 1e-6)
        }
        for text in ["2026-11-18T11:06:40.1Z", "2026-11-18T11:06:40.123456Z", "2026-11-18T11:06:40.123456789Z", "2024-02-29T23:59:59Z"] {
            let reference = try foundation.parse(text.contains(".") ? text : text.replacingOccurrences(of: "Z", with: ".0Z"))
            #expect(abs((WireTime.parse(text)?.timeIntervalSince1970 ?? 0) - reference.timeIntervalSince1970) < 1e-6, "\(text)")
        }
    }

    /// `Wire.decode` reads with `WireDecoder`; Foundation's `JSONDecoder` is the reference: the same values from every
    /// message's golden JSON and from variants (nulls, absent optionals, extra fields), and refusals that name the same
    /// field.
    @Test("the wire decoder reads what Foundation's JSONDecoder reads, and refuses what it refuses")
    func decoderMatchesFoundation() throws {
        func same<M: WireMessage>(_ type: M.Type, _ json: String) throws {
            let ours = try Wire.decode(M.self, from: Array(json.utf8))
            #expect(ours == (try Wire.decodeWithFoundation(M.self, from: Array(json.utf8))), "\(json)")
        }
        try same(SendRequest.self, Self.sendGolden)
        try same(SendRequest.self, Self.sendGolden.replacingOccurrences(of: #""custom_id":"paul","#, with: #""custom_id":null,"extra":[1,{"a":2}],"#))
        try same(ContactSnapshot.self, #"{"v":1,"kind":"contact","project":"demo","email":null,"installations":[{"installation_id":"I","dev":null}]}"#)
        try same(ContactSnapshot.self, #"{"v":1,"kind":"contact","project":"demo","custom_id":"p\u00e9\/x","updated_at":"2026-11-18T11:06:40Z"}"#)
        let letter = DeadLetter(service: "o", reason: "r", record: Self.record, at: Self.at)
        try same(DeadLetter.self, String(decoding: try Wire.encode(letter), as: UTF8.self))
        let report = DeliveryReport(id: "d", project: "p", customID: "c", channel: .sms, outcome: .unsubscribed, at: Self.at)
        try same(DeliveryReport.self, String(decoding: try Wire.encode(report), as: UTF8.self))
        // Every field set, as the notifier's ledger writes a report (the handover reads them back).
        var full = DeliveryReport(
            id: "s/i/sent", sendID: "s", project: "p", customID: "c", installationID: "i", channel: .push, outcome: .sent,
            reason: nil, token: "ab", address: nil, at: Self.at)
        full.targetID = "i"
        full.profileKey = "p/c"
        full.campaign = "cart"
        full.provider = "apns"
        full.providerMessageID = "04ee8d5e-b3df-29bc-9dbe-fcc6bd2256ef"
        full.attempts = 2
        full.triggeredAt = Self.at - 1
        full.decidedAt = Self.at - 0.5
        try same(DeliveryReport.self, String(decoding: try Wire.encode(full), as: UTF8.self))
        #expect(try Wire.decode(DeliveryReport.self, from: try Wire.encode(full)) == full)

        for json in [
            #"{"v":1,"kind":"contact"}"#,
            #"{"v":1,"kind":"contact","project":7}"#,
            #"{"v":1,"kind":"contact","project":null}"#,
            #"{"v":1,"kind":"contact","project":"p","updated_at":"yesterday"}"#,
            #"{"v":1,"kind":"contact","project":"p","installations":[{"dev":true}]}"#,
            #"{"v":1,"kind":"contact","project":"p","installations":{"a":1}}"#,
            #"{"v":"1","kind":"contact"}"#,
            #"[1]"#,
        ] {
            let ours = #expect(throws: WireError.self) { try Wire.decode(ContactSnapshot.self, from: Array(json.utf8)) }
            let theirs = #expect(throws: WireError.self) { try Wire.decodeWithFoundation(ContactSnapshot.self, from: Array(json.utf8)) }
            // The same field and kind of fault; the wording after it is each decoder's own.
            func head(_ reason: String?) -> String { String((reason ?? "").prefix { $0 != ":" }) + ((reason ?? "").split(separator: ":").dropFirst().first.map { ":" + $0.prefix { $0 != ":" } } ?? "") }
            #expect(head(ours?.reason) == head(theirs?.reason), "\(json): \(ours?.reason ?? "") / \(theirs?.reason ?? "")")
        }
        // A fraction where an integer goes: Foundation's error names no field ("malformed JSON"); ours names it.
        let fraction = #expect(throws: WireError.self) { try Wire.decode(ContactSnapshot.self, from: Array(#"{"v":1.5,"kind":"contact"}"#.utf8)) }
        #expect(fraction?.reason.hasPrefix("not a Herald message: field v:") == true, "\(fraction?.reason ?? "")")
    }

    /// Ids made of digests (send ids, `apns-id`, identity proofs) must not change across versions: the same text as the
    /// `String(format: "%02x")` they were made with before.
    @Test("hexString writes every byte as String(format: \"%02x\") did")
    func hex() {
        let bytes = (0...255).map(UInt8.init)
        #expect(bytes.hexString == bytes.map { String(format: "%02x", $0) }.joined())
        #expect([UInt8]().hexString == "")
    }

    /// RFC 3339's `date-time`, exactly (the API's schema says `format: date-time`), and Braze's colonless offsets.
    /// Foundation's parser, which the ingest used to fall back on, read `2026-02-30` as March 2 and `24:00` as the next
    /// day.
    @Test("times read are RFC 3339 date-times, nothing else")
    func timeGrammar() {
        let utc = "2026-11-18T11:06:40.123Z"
        for (text, expected) in [
            ("2026-11-18T12:06:40.123+01:00", utc), ("2026-11-18T03:06:40.123-0800", utc), ("2026-11-18t11:06:40.123z", utc),
            ("2026-11-18T11:06:40.123456789123Z", utc), ("2026-11-18T11:36:40.123+00:30", utc),
            ("2016-12-31T23:59:60Z", "2017-01-01T00:00:00.000Z"), ("0000-01-01T00:00:00Z", "0000-01-01T00:00:00.000Z"),
            ("2026-11-18T23:59:59-23:59", "2026-11-19T23:58:59.000Z"),
        ] {
            #expect(WireTime.parse(text).map(WireTime.format) == expected, "\(text)")
        }
        for text in [
            "2026-02-30T10:00:00Z", "2026-11-18T24:00:00Z", "2026-11-18T11:60:00Z", "2026-11-18T11:00:61Z",
            "2026-11-18 11:06:40Z", "2026-11-18T11:06:40", "2026-11-18T11:06:40.Z", "2026-11-18T11:06:40+24:00",
            "2026-11-18T11:06:40+01:60", "2026-11-18T11:06:40+1:00", "2026-11-18T11:06:40+01", "2026-11-18T11:06:40Zx",
            "2026-11-18T11:06:40 Z", "+2026-11-18T11:06:40Z", "2026-13-18T11:06:40Z", "2026-11-00T11:06:40Z", "18/11/2026",
            "２026-11-18T11:06:40Z",
        ] {
            #expect(WireTime.parse(text) == nil, "\(text)")
        }
    }

    @Test("every topic of the design, keyed topics sharing the partition count")
    func topics() {
        let specs = HeraldTopic.specs(partitions: 12)
        #expect(specs.map(\.name) == [
            "herald.ingest", "herald.config", "herald.contacts", "herald.sends.push", "herald.sends.email",
            "herald.sends.sms", "herald.sends.webhook", "herald.deliveries", "herald.dlq", "herald.state.orchestrator",
            "herald.state.notifier", "herald.owners", "herald.webhooks", "herald.suppressions", "herald.erasures",
            "herald.export.questions", "herald.export.answers",
        ])
        #expect(specs.filter { $0.partitions == 12 }.count == 11)
        #expect(specs.filter { $0.name.hasPrefix("herald.export.") }.allSatisfy { $0.partitions == 1 && $0.config == ["retention.ms": "3600000"] })
        #expect(specs.first { $0.name == "herald.config" }?.partitions == 1)
        #expect(specs.first { $0.name == "herald.owners" }?.partitions == 1)
        #expect(specs.first { $0.name == "herald.webhooks" }?.partitions == 1)
        #expect(specs.first { $0.name == "herald.suppressions" }?.partitions == 1)
        #expect(specs.filter { $0.config["cleanup.policy"] == "compact" }.map(\.name) == [
            "herald.config", "herald.contacts", "herald.state.orchestrator", "herald.state.notifier", "herald.owners",
            "herald.webhooks", "herald.suppressions",
        ])
    }
}
