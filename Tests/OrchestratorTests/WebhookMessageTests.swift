import Foundation
import HeraldTestSupport
import Shared
import Testing

@testable import OrchestratorDomain

/// A campaign's webhook message rendered for a profile (issue 61, item 1): the request whole, or a dead letter naming
/// the field a profile value would have turned into another request.
@Suite("Webhook messages", .serialized)
struct WebhookMessageTests {
    static let endpoint = #"{"kind":"webhook_endpoint","id":"crm","project":"demo","url":"https://crm.example.com/hooks/","headers":{"X-Shop":"demo","X-Over":"endpoint"}}"#

    func harness(_ variant: String) async throws -> EngagementHarness {
        try await EngagementHarness(try configuration([
            demoProject, Self.endpoint,
            #"{"kind":"template","id":"t","project":"demo","channel":"webhook","variants":{"default":\#(variant)}}"#,
            #"{"kind":"campaign","id":"orders","name":"Orders","project":"demo","type":"transactional","trigger":{"event":"PURCHASED"},"reeligibility":"always","messages":[{"channel":"webhook","endpoint":"crm","template":"t"}]}"#,
        ]))
    }

    static let variant = #"""
        {"method":"PUT","path":"/users/{{ c.nickname | url_encode }}?src=herald","headers":{"X-Campaign":"{{ campaign.name }}","x-over":"template"},
         "body":"{\"user\": {{ c.nickname | json }}, \"amount\": {{ event.amount | json }} }"}
        """#

    @Test("the request is rendered whole: the endpoint's URL and the path, the method, the headers (the template's win), a JSON body; no contact revision is waited for")
    func renders() async throws {
        let harness = try await harness(Self.variant)
        try await harness.apply([
            try harness.writer.update(id: "p", #"{"nickname":"Zoé \"Z\" / 2"}"#),
            try harness.writer.event(id: "e", #"{"name":"PURCHASED","attributes":{"amount":12.5}}"#),
        ])
        let send = try #require(try harness.sends(.webhook).first, "\(harness.deadLetters.map(\.reason))")
        #expect(send.channel == .webhook && send.endpoint == "crm" && send.contactRevision == nil)
        #expect(send.content["url"] == "https://crm.example.com/hooks/users/Zo%C3%A9+%22Z%22+%2F+2?src=herald")
        #expect(send.content["method"] == "PUT" && send.content["content_type"] == "application/json")
        #expect(send.content["header.X-Shop"] == "demo" && send.content["header.X-Campaign"] == "Orders")
        #expect(send.content["header.x-over"] == "template" && send.content["header.X-Over"] == nil)
        let body = try JSONParser.parse(Array(try #require(send.content["body"]).utf8))
        #expect(body["user"]?.stringValue == #"Zoé "Z" / 2"# && body["amount"] == .number("12.5"))
    }

    @Test(
        "a value that would change the request fails the message, naming the field: a path out of the endpoint's, a line break in a header, a body no longer JSON",
        arguments: [
            (#"{"path":"/users/{{ c.nickname }}"}"#, #"{"nickname":"../admin"}"#, #"t.default.path: a ".." segment would leave the endpoint's path"#),
            (#"{"path":"/users/{{ c.nickname }}"}"#, #"{"nickname":"a b"}"#, "t.default.path: holds a blank, a control or a non-ASCII character (percent-encode it, with url_encode)"),
            (#"{"headers":{"X-Name":"{{ c.nickname }}"}}"#, #"{"nickname":"a\r\nX-Injected: 1"}"#, "t.default.header.X-Name: a line break in a header"),
            (#"{"body":"{\"user\": \"{{ c.nickname }}\"}"}"#, #"{"nickname":"a\"b"}"#, "t.default.body: not JSON once rendered, and the content type is application/json (a value needs the json filter, or quotes)"),
        ])
    func refused(variant: String, profile: String, reason: String) async throws {
        let harness = try await harness(variant)
        try await harness.apply([
            try harness.writer.update(id: "p", profile),
            try harness.writer.event(id: "e", #"{"name":"PURCHASED"}"#),
        ])
        #expect(try harness.sends(.webhook).isEmpty)
        let letter = try #require(harness.deadLetters.first)
        #expect(letter.reason.contains(reason), "\(letter.reason)")
    }
}
