import CompressNIO
import Foundation
import HTTPTypes
import HeraldTestSupport
import NIOCore
import ServiceSupport
import Shared
import Testing

@testable import Ingest

/// The sample's website source: signed identity, no contact fields.
let writeKey = "segment_demo_0123456789abcdef"
/// The sample's backend source: `require_signed_identity: false`, contact fields allowed (its key stays on servers).
let backendWriteKey = "segment_backend_demo_0123456789"

/// The proof of a userId for the website source (`integrations.Herald.custom_id_auth`).
func segmentProof(_ userID: String) -> String {
    CustomIDProof.make(apiKey: writeKey, customID: userID, secret: "identity_secret_demo_web")
}

func basic(_ user: String) -> HTTPFields {
    [.authorization: "Basic " + Data("\(user):".utf8).base64EncodedString()]
}

func segment(_ body: String, path: String = "/v1/batch", gzip: Bool = false, sink: FakeSink = FakeSink()) async throws -> Answer {
    var headers = basic(writeKey)
    var bytes: [UInt8]?
    if gzip {
        headers[.contentEncoding] = "gzip"
        var buffer = ByteBuffer(string: body)
        let compressed = try buffer.compress(with: .gzip)
        bytes = Array(compressed.readableBytesView)
    }
    return try await call(path, body: body, headers: headers, sink: sink, catalog: legacyCatalog(), bytes: bytes)
}

@Suite("Free-text names as Herald's (NameMapping)")
struct NameMappingTests {
    @Test(
        "event names: words joined by _ in uppercase; case, spacing, punctuation and camelCase read alike",
        arguments: [
            ("Order Completed", "ORDER_COMPLETED"), ("order-completed", "ORDER_COMPLETED"), ("orderCompleted", "ORDER_COMPLETED"),
            ("  Order   Completed!! ", "ORDER_COMPLETED"), ("HTTPServer Error", "HTTP_SERVER_ERROR"), ("Café Visité", "CAFE_VISITE"),
            ("item2Price", "ITEM2_PRICE"), ("app_open", "APP_OPEN"), ("X", "X"),
            (String(repeating: "a", count: 30), String(repeating: "A", count: 30)),
        ])
    func events(text: String, name: String) {
        #expect(NameMapping.map(text, as: .event) == (name, false))
    }

    @Test("attribute names are the same words in lowercase")
    func attributes() {
        #expect(NameMapping.map("firstName", as: .attribute).name == "first_name")
        #expect(NameMapping.map("Postal Code", as: .attribute).name == "postal_code")
        #expect(NameMapping.map("$price", as: .attribute).name == "price")
    }

    @Test("a name over 30 keeps 21 characters and a hash of the original: two long names with one beginning stay apart")
    func long() {
        let first = NameMapping.map("Checkout Step Viewed By Returning Customer", as: .event)
        let second = NameMapping.map("Checkout Step Viewed By Returning Visitor", as: .event)
        #expect(first.shortened && second.shortened)
        #expect(first.name.hasPrefix("CHECKOUT_STEP_VIEWED_") && first.name.count == 29)  // the 21st character, `_`, is not kept
        #expect(first.name != second.name)
        #expect(Rules.isValidName(first.name))
        let thirtyOne = NameMapping.map(String(repeating: "b", count: 31), as: .attribute)
        #expect(thirtyOne.shortened && thirtyOne.name.count == 30 && thirtyOne.name.hasPrefix(String(repeating: "b", count: 21) + "_"))
    }

    @Test("a name with no letter or digit is E_ (events) or a_ (attributes) and its hash")
    func empty() {
        let party = NameMapping.map("🎉", as: .event)
        #expect(party.name.hasPrefix("E_") && party.name.count == 10 && party.shortened)
        #expect(NameMapping.map("!!!", as: .attribute).name.hasPrefix("a_"))
        #expect(NameMapping.map("🎉", as: .event) == party)
    }
}

@Suite("Segment's Tracking API: /v1/batch and the single calls")
struct SegmentAPITests {
    static let batch = #"""
        {"batch":[
          {"type":"identify","userId":"u1","messageId":"m-1","traits":{"email":"u1@example.com","firstName":"Ann","address":{"city":"Paris","postalCode":"75001"},"id":"u1","createdAt":"2026-01-02T03:04:05Z"},"context":{"locale":"fr-FR","timezone":"Europe/Paris","library":{"name":"analytics-python"}}},
          {"type":"track","userId":"u1","messageId":"m-2","event":"Product Viewed","properties":{"productId":"p1","price":9.5,"tags":[1,"a"]},"timestamp":"2026-11-24T10:00:00+01:00"},
          {"type":"track","anonymousId":"anon-1","messageId":"m-3","event":"Signed Up"},
          {"type":"page","userId":"u1","messageId":"m-4","name":"Home","properties":{"url":"https://example.com/"}},
          {"type":"screen","userId":"u1","messageId":"m-5","name":"Cart"},
          {"type":"group","userId":"u1","messageId":"m-6","groupId":"acme"},
          {"type":"alias","userId":"u1","previousId":"anon-1","messageId":"m-7"}
        ],"sentAt":"2026-11-24T10:00:01Z"}
        """#

    @Test("each message type becomes Herald's write, messageId as its id")
    func messages() async throws {
        let sink = FakeSink()
        let answer = try await segment(Self.batch, sink: sink)
        #expect(answer.status == .ok && answer.json["success"] == .bool(true), "\(answer.json)")
        #expect(answer.problems.isEmpty, "\(answer.problems)")
        let records = sink.records
        #expect(records.map(\.id) == ["m-1", "m-2", "m-3", "m-4", "m-5", "m-6", "m-7"])
        #expect(records.map(\.op) == [.profileUpdate, .event, .event, .event, .event, .profileUpdate, .identify])
        let profile = try #require(records[0].field("profile"))
        #expect(profile["email"] == .string("u1@example.com"))
        #expect(profile["language"] == .string("fr") && profile["region"] == .string("FR") && profile["timezone"] == .string("Europe/Paris"))
        #expect(records[0].custom("first_name.s") == .string("Ann") && records[0].custom("address_city.s") == .string("Paris"))
        #expect(records[0].custom("address_postal_code.s") == .string("75001") && records[0].custom("created_at.t") != nil)
        #expect(records[0].custom("id.s") == nil && records[0].source == .server && records[0].key == "demo/u1")
        let viewed = try #require(records[1].field("event"))
        #expect(viewed["name"] == .string("PRODUCT_VIEWED") && viewed["time"] == .string("2026-11-24T09:00:00.000Z"))
        #expect(viewed["attributes"]?["product_id.s"] == .string("p1") && viewed["attributes"]?["price.f"] == .number("9.5"))
        #expect(viewed["attributes"]?["tags.a"] == .array([.string("1"), .string("a")]))
        // An anonymous id is the source's installation-like id.
        #expect(records[2].source == .app(id: "demo-web", dev: false) && records[2].installationID == "anon-1" && records[2].key == "demo/install/anon-1")
        #expect(records[3].field("event")?["name"] == .string("PAGE_VIEWED") && records[3].field("event")?["attributes"]?["name.s"] == .string("Home"))
        #expect(records[4].field("event")?["name"] == .string("SCREEN_VIEWED"))
        #expect(records[5].custom("groups.a") == .object([JSONMember("$add", .array([.string("acme")])), JSONMember("$remove", .array([]))]))
        #expect(records[6].customID == "u1" && records[6].installationID == "anon-1" && records[6].source == .app(id: "demo-web", dev: false))
    }

    @Test("a gzip body is read like a plain one; a corrupt one is 400, one inflating past the body limit 413")
    func gzip() async throws {
        var gzipped = basic(writeKey)
        gzipped[.contentEncoding] = "gzip"
        let plain = FakeSink(), compressed = FakeSink()
        _ = try await segment(Self.batch, sink: plain)
        let answer = try await segment(Self.batch, gzip: true, sink: compressed)
        #expect(answer.status == .ok)
        #expect(compressed.records.map(\.value) == plain.records.map(\.value))
        let corrupt = try await call("/v1/batch", headers: gzipped, bytes: [0x1F, 0x8B, 1, 2, 3])
        #expect(corrupt.status.code == 400 && corrupt.json["code"] == .string("malformed_gzip"))
        var bomb = ByteBuffer(string: #"{"batch":[],"x":""# + String(repeating: " ", count: 2 << 20) + "\"}")
        let deflated = Array(try bomb.compress(with: .gzip).readableBytesView)
        let tooLarge = try await call("/v1/batch", headers: gzipped, bytes: deflated)
        #expect(deflated.count < 100_000 && tooLarge.status.code == 413)
    }

    @Test("the write key as the basic-auth user: missing or unknown is 401, in Segment's shape")
    func authentication() async throws {
        let missing = try await call("/v1/batch", body: Self.batch)
        #expect(missing.status.code == 401 && missing.json["code"] == .string("missing_credentials") && missing.json["message"] != nil)
        let unknown = try await call("/v1/batch", body: Self.batch, headers: basic("nope_0123456789abcdef"))
        #expect(unknown.status.code == 401 && unknown.json["code"] == .string("invalid_credentials"))
        let rest = try await call("/v1/batch", body: Self.batch, headers: basic(restKey))
        #expect(rest.status.code == 401)
        // A write key is for Segment's API only.
        let elsewhere = try await call("/v1/profiles/update", key: writeKey, rest: true, body: "[]")
        #expect(elsewhere.status.code == 403)
    }

    @Test("Order Completed with products: one purchase per product in the order's currency; without products, an event")
    func orderCompleted() async throws {
        let sink = FakeSink()
        _ = try await segment(
            #"{"type":"track","userId":"u1","messageId":"o-1","event":"Order Completed","properties":{"order_id":"o1","currency":"EUR","revenue":25,"products":[{"product_id":"p1","price":10,"quantity":2,"name":"Mug"},{"sku":"p2","price":5}]}}"#,
            path: "/v1/track", sink: sink)
        #expect(sink.records.map(\.op) == [.purchase, .purchase])
        #expect(sink.records.map(\.id) == ["o-1", "o-1#1"])
        let first = try #require(sink.records.first?.field("purchase"))
        #expect(first["product_id"] == .string("p1") && first["quantity"] == .number("2") && first["revenue_usd"] == .number("21.6"))
        #expect(first["properties"]?["order_id.s"] == .string("o1") && first["properties"]?["name.s"] == .string("Mug"))
        #expect(sink.records[1].field("purchase")?["product_id"] == .string("p2"))
        let plain = FakeSink()
        _ = try await segment(#"{"type":"track","userId":"u1","event":"Order Completed","properties":{"revenue":25}}"#, path: "/v1/track", sink: plain)
        #expect(plain.records.map(\.op) == [.event])
    }

    @Test("what cannot be kept is reported by path; what was changed is listed in adjusted; a batch of nothing valid is 422")
    func problems() async throws {
        let sink = FakeSink()
        let answer = try await segment(
            #"{"batch":[{"type":"track","event":"x"},{"type":"track","userId":"u","event":"ok","properties":{"n":null,"s":"\#(long256)"},"extra":1},{"type":"nope","userId":"u"},{"type":"alias","userId":"u","previousId":" "}]}"#,
            sink: sink)
        #expect(answer.problems == [
            "batch[0] missing_identifier", "batch[1].properties.n null_value", "batch[2].type invalid_type",
            "batch[3].previousId invalid_previous_id",
        ])
        #expect(answer.adjusted == ["batch[1].extra ignored_field", "batch[1].properties.s string_truncated"])
        #expect(sink.records.count == 1)
        let none = try await segment(#"{"batch":[{"type":"track","event":"x"}]}"#)
        #expect(none.status.code == 422 && none.json["code"] == .string("validation_failed"))
    }

    @Test("a source sets email and phone only when it says contact_fields true (false by default: a website's key is public); its other traits are kept")
    func contactFields() async throws {
        let sink = FakeSink()
        let answer = try await call(
            "/v1/identify",
            body: #"{"userId":"u1","traits":{"email":"x@example.com","phone":"+33600000000","plan":"gold"},"integrations":{"Herald":{"custom_id_auth":"\#(segmentProof("u1"))"}}}"#,
            headers: basic(writeKey), sink: sink)
        #expect(answer.problems == ["traits.email not_allowed", "traits.phone not_allowed"])
        #expect(sink.records.first?.field("profile") == .object([JSONMember("custom_attributes", .object([JSONMember("plan.s", .string("gold"))]))]))
        let backend = FakeSink()
        let allowed = try await call(
            "/v1/identify", body: #"{"userId":"u1","traits":{"email":"x@example.com","plan":"gold"}}"#, headers: basic(backendWriteKey), sink: backend)
        #expect(allowed.problems.isEmpty && backend.records.first?.field("profile")?["email"] == .string("x@example.com"))
    }

    @Test("signed identity (the default): a userId needs its proof in integrations.Herald.custom_id_auth; anonymous messages are flagged unsigned")
    func signedIdentity() async throws {
        let sink = FakeSink()
        let answer = try await call(
            "/v1/batch",
            body: #"""
                {"batch":[{"type":"track","userId":"u1","event":"a","messageId":"s-1"},
                          {"type":"track","userId":"u1","event":"a","messageId":"s-2","integrations":{"Herald":{"custom_id_auth":"\#(segmentProof("u2"))"}}},
                          {"type":"track","userId":"u1","event":"a","messageId":"s-3","integrations":{"Herald":{"custom_id_auth":"\#(CustomIDProof.make(apiKey: backendWriteKey, customID: "u1", secret: "identity_secret_demo_web"))"}}},
                          {"type":"track","userId":"u1","event":"a","messageId":"s-4","integrations":{"Herald":{"custom_id_auth":"\#(segmentProof("u1"))"}}},
                          {"type":"identify","userId":"u1","anonymousId":"anon-9","messageId":"s-5","integrations":{"Herald":{"custom_id_auth":"\#(segmentProof("u1"))"}}},
                          {"type":"identify","userId":"u1","anonymousId":"anon-9","messageId":"s-6"},
                          {"type":"track","anonymousId":"anon-9","event":"a","messageId":"s-7"}]}
                """#,
            headers: basic(writeKey), sink: sink)
        #expect(answer.status == .ok)
        #expect(answer.problems == ["batch[0] missing_custom_id_auth", "batch[1] invalid_custom_id_auth", "batch[2] invalid_custom_id_auth", "batch[5] missing_custom_id_auth"])
        #expect(sink.records.map(\.id) == ["s-4", "s-5", "s-7"])
        #expect(sink.records.map(\.unsigned) == [false, false, true])
        // A server-side source that says so writes any userId, unflagged.
        let backend = FakeSink()
        _ = try await call("/v1/track", body: #"{"userId":"u1","event":"a"}"#, headers: basic(backendWriteKey), sink: backend)
        _ = try await call("/v1/track", body: #"{"anonymousId":"anon-9","event":"a"}"#, headers: basic(backendWriteKey), sink: backend)
        #expect(backend.records.count == 2 && backend.records.allSatisfy { !$0.unsigned })
    }
}
