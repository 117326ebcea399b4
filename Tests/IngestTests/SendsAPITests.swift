import Foundation
import HTTPTypes
import HeraldTestSupport
import Shared
import Testing

@testable import Ingest

/// `POST /v1/sends/push` (issue 22, item 5): a transactional push to one device, as Batch's transactional API.
@Suite("Ingest API: transactional push to one device")
struct SendsAPITests {
    func send(_ body: String, sink: FakeSink = FakeSink()) async throws -> Answer {
        try await call("/v1/sends/push", key: restKey, rest: true, body: body, sink: sink)
    }

    @Test("to an installation: one push_send record keyed by its home, the notification as a template's texts")
    func installation() async throws {
        let sink = FakeSink()
        let answer = try await send(
            #"{"installation_id":"I-1","app":"demo-ios","id":"tx-1","campaign":"shipping","notification":{"title":"Shipped","body":"Thursday","badge":"+1","ttl":3600,"relevance_score":0.5,"image_url":"https://x/a.png","category":"ORDER"},"payload":{"order":42,"gift":true}}"#,
            sink: sink)
        #expect(answer.status == .ok, "\(answer.json)")
        let record = try #require(sink.records.first)
        #expect(record.op == .pushSend && record.id == "tx-1" && record.key == "demo/install/I-1" && record.source == .server)
        let push = try #require(record.field("push"))
        #expect(push["app"] == .string("demo-ios") && push["campaign"] == .string("shipping"))
        #expect(push["notification"] == .object([
            JSONMember("badge", .string("+1")), JSONMember("body", .string("Thursday")), JSONMember("category", .string("ORDER")),
            JSONMember("image_url", .string("https://x/a.png")), JSONMember("relevance_score", .string("0.5")),
            JSONMember("title", .string("Shipped")), JSONMember("ttl", .string("3600s")),
        ]))
        #expect(push["payload"] == .object([JSONMember("gift", .bool(true)), JSONMember("order", .number("42"))]))
    }

    @Test("a badge alone (0 clears the icon, silently) and ttl 0 (now or never) are taken")
    func badgeOnly() async throws {
        let sink = FakeSink()
        let answer = try await send(#"{"installation_id":"I-1","notification":{"badge":0,"ttl":0}}"#, sink: sink)
        #expect(answer.status == .ok, "\(answer.json)")
        let push = try #require(sink.records.first?.field("push"))
        #expect(push["notification"] == .object([JSONMember("badge", .string("0")), JSONMember("ttl", .string("0s"))]))
    }

    @Test("to a raw token: keyed by the token, checked against its app's platform, with its environment")
    func rawToken() async throws {
        let sink = FakeSink()
        let token = String(repeating: "AB", count: 32)
        let answer = try await send(#"{"token":"\#(token)","app":"demo-ios","environment":"sandbox","notification":{"body":"B"}}"#, sink: sink)
        #expect(answer.status == .ok)
        let record = try #require(sink.records.first)
        #expect(record.deviceToken == token.lowercased() && record.key == "demo/token/\(token.lowercased())")
        #expect(record.field("push")?["environment"] == .string("sandbox") && record.field("push")?["campaign"] == .string("transactional"))
        let notHex = try await send(#"{"token":"not-hex","app":"demo-ios","notification":{"body":"B"}}"#)
        #expect(notHex.status.code == 422 && notHex.problems == ["token invalid_token"])
        let android = try await send(#"{"token":"fcm:token-1","app":"demo-android","notification":{"body":"B"}}"#)
        #expect(android.status == .ok)
    }

    @Test(
        "any problem refuses the send, naming the field",
        arguments: [
            (#"{"notification":{"body":"B"}}"#, " invalid_target"),
            (#"{"installation_id":"I","token":"t","app":"demo-android","notification":{"body":"B"}}"#, " invalid_target"),
            (#"{"token":"t","notification":{"body":"B"}}"#, "token missing_field"),
            (#"{"installation_id":"I","environment":"sandbox","notification":{"body":"B"}}"#, "environment invalid_field"),
            (#"{"installation_id":"I","notification":{"sound":"x"}}"#, "notification missing_field"),
            (#"{"installation_id":"I","notification":{"push_type":"background","priority":"high"}}"#, "notification.priority invalid_value"),
            (#"{"installation_id":"I","notification":{"body":"B","badge":"3"}}"#, "notification.badge invalid_value"),
            (#"{"installation_id":"I","notification":{"body":"B","badge":100000}}"#, "notification.badge invalid_value"),
            (#"{"installation_id":"I","notification":{"body":"B","ttl":2419201}}"#, "notification.ttl invalid_value"),
            (#"{"installation_id":"I","notification":{"body":"B","relevance_score":1.5}}"#, "notification.relevance_score invalid_value"),
            (#"{"installation_id":"I","notification":{"body":"B","image_url":"a.png"}}"#, "notification.image_url invalid_url"),
            (#"{"installation_id":"I","notification":{"body":"","title":"T"}}"#, "notification.body invalid_value"),
            (#"{"installation_id":"I","notification":{"body":"B","attachment_type":"pdf"}}"#, "notification.attachment_type invalid_value"),
            (#"{"installation_id":"I","notification":{"body":"B","emoji":"x"}}"#, "notification.emoji unknown_field"),
            (#"{"installation_id":"I","notification":{"body":"B"},"payload":{"aps":{}}}"#, "payload.aps reserved_name"),
            (#"{"installation_id":"I","notification":{"body":"B"},"payload":{"x":null}}"#, "payload.x invalid_type"),
            // APNs details: a background push cannot set the badge, a collapse id is 64 bytes at most, "+N" needs an
            // installation's count.
            (#"{"installation_id":"I","notification":{"push_type":"background","badge":0}}"#, "notification.badge invalid_value"),
            (#"{"installation_id":"I","notification":{"body":"B","collapse_id":"\#(String(repeating: "c", count: 65))"}}"#, "notification.collapse_id invalid_value"),
            (#"{"installation_id":"I","notification":{"body":"B","collapse_id":"é"}}"#, "notification.collapse_id invalid_value"),
            (#"{"token":"t","app":"demo-android","notification":{"body":"B","badge":"+1"}}"#, "notification.badge invalid_value"),
            // FCM's reserved data keys, and texts the schema allows one by one that no provider takes together.
            (#"{"installation_id":"I","notification":{"body":"B"},"payload":{"from":"x"}}"#, "payload.from reserved_name"),
            (#"{"installation_id":"I","notification":{"body":"B"},"payload":{"google.c.a.e":"1"}}"#, "payload.google.c.a.e reserved_name"),
            (#"{"installation_id":"I","notification":{"body":"B"},"payload":{"gcm.notification.x":"1"}}"#, "payload.gcm.notification.x reserved_name"),
            (#"{"installation_id":"I","notification":{"title":"\#(String(repeating: "t", count: 2048))","body":"\#(String(repeating: "b", count: 2048))"}}"#,
             "notification payload_too_large"),
            (#"{"installation_id":"I","notification":{"body":"\#(String(repeating: "b", count: 2000))"},"payload":{"text":"\#(String(repeating: "p", count: 2100))"}}"#,
             "notification payload_too_large"),
            (#"{"installation_id":"I"}"#, "notification missing_field"),
        ])
    func refused(body: String, problem: String) async throws {
        let sink = FakeSink()
        let answer = try await send(body, sink: sink)
        #expect(answer.status.code == 422 && answer.problems.contains(problem), "\(answer.problems)")
        #expect(sink.records.isEmpty)
    }

    @Test("an app the apps file does not have is 404")
    func unknownApp() async throws {
        let answer = try await send(#"{"token":"t","app":"nope","notification":{"body":"B"}}"#)
        #expect(answer.status.code == 404 && answer.code == "unknown_app")
    }
}
