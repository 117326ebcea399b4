import Foundation
import Liquid
import HeraldTestSupport
import Shared
import Testing

@testable import OrchestratorDomain

/// Liquid in campaign messages: conditions, loops, Braze's forms and content blocks render into the send request;
/// `abort_message` sends nothing, counts against no cap, and leaves the profile eligible.
@Suite("Liquid in campaign messages", .serialized)
struct LiquidMessageTests {
    static let block = #"{"kind":"content_block","id":"sign-off","project":"demo","content":"— the {{ campaign.${name} }} team"}"#

    func harness(body: String, reeligibility: String = "always", extra: [String] = []) async throws -> EngagementHarness {
        let template = JSONValue.object([
            JSONMember("kind", .string("template")), JSONMember("id", .string("t")), JSONMember("project", .string("demo")),
            JSONMember("channel", .string("push")),
            JSONMember("variants", .object([JSONMember("default", .object([JSONMember("body", .string(body))]))])),
        ]).serialized
        return try await EngagementHarness(
            try configuration(
                [demoProject, String(decoding: template, as: UTF8.self), Self.block]
                    + [
                        #"{"kind":"campaign","id":"cart","name":"Cart","project":"demo","type":"transactional","trigger":{"event":"ADD_TO_CART"},"reeligibility":"\#(reeligibility)","messages":[{"channel":"push","template":"t"}]}"#
                    ] + extra))
    }

    @Test("a condition, a loop, filters, Braze's forms and a content block render from the profile and the event")
    func rendersWhole() async throws {
        let body = """
            {% if c.tier == "gold" %}Dear {{${first_name}}}{% else %}Hi {{ c.first_name | default: "there" }}{% endif %}: \
            {% for item in event.items limit: 2 %}{{ item | upcase }}{% unless forloop.last %}, {% endunless %}{% endfor %} \
            for {{ event_properties.${total} | times: 1.2 | round: 2 }} ({{ event.items | size }} items, \
            {{ custom_attribute.${visits} | plus: 1 }} visits) {{content_blocks.${sign-off}}}
            """
        let harness = try await harness(body: body)
        try await harness.apply([
            try harness.writer.update(id: "p", #"{"first_name":"Paul","tier":"gold","visits":4}"#),
            try harness.writer.event(id: "e", #"{"name":"add_to_cart","attributes":{"items":["skis","wax","poles"],"total":10.5}}"#),
        ])
        let send = try #require(try harness.sends().first, "\(harness.deadLetters.map(\.reason))")
        #expect(send.content["body"] == "Dear Paul: SKIS, WAX for 12.6 (3 items, 5 visits) — the Cart team")
    }

    @Test("abort_message: nothing sent, no dead letter, and a later trigger still sends to a once-only campaign")
    func abortMessage() async throws {
        let body = #"{% if event.items.size == 0 %}{% abort_message("empty cart") %}{% endif %}{{ event.items | join: ", " }}"#
        let harness = try await harness(body: body, reeligibility: "once")
        try await harness.apply([try harness.writer.event(id: "e1", #"{"name":"add_to_cart","attributes":{"items":[]}}"#)])
        #expect(try harness.sends().isEmpty)
        #expect(harness.deadLetters.isEmpty)
        try await harness.apply([try harness.writer.event(id: "e2", #"{"name":"add_to_cart","attributes":{"items":["skis"]}}"#)])
        #expect(try harness.sends().map { $0.content["body"] } == ["skis"])
        // Once sent, the once-only campaign is done.
        try await harness.apply([try harness.writer.event(id: "e3", #"{"name":"add_to_cart","attributes":{"items":["wax"]}}"#)])
        #expect(try harness.sends().count == 1)
    }

    @Test("a loop too long for one render fails the message whole, as a dead letter")
    func boundedWork() async throws {
        let harness = try await harness(body: "{% for i in (1..1000000) %}{{ i }}{% endfor %}")
        try await harness.apply([try harness.writer.event(id: "e", #"{"name":"add_to_cart"}"#)])
        #expect(try harness.sends().isEmpty)
        let letter = try #require(harness.deadLetters.first)
        #expect(letter.reason.contains("more than 100000 steps"), "\(letter.reason)")
    }
}

/// `herald template render --profile`: a live profile's variables from a data directory.
@Suite("Template preview from a data directory", .serialized)
struct MessagePreviewTests {
    @Test("a profile's attributes, natives and Braze's names; nil for one no partition holds")
    func livePreview() async throws {
        let harness = try await EngagementHarness(try configuration(demoProject))
        try await harness.apply([try harness.writer.update(id: "p", #"{"first_name":"Paul","visits":4,"$timezone":"Europe/Paris"}"#)])
        let (variables, zone) = try #require(
            try MessagePreview.variables(directory: harness.directory, key: "demo/paul", defaultTimeZone: "UTC"))
        #expect(zone.identifier == "Europe/Paris")
        var options = LiquidRenderOptions()
        options.strictVariables = true
        let template = try LiquidTemplate(parsing: "{{${first_name}}} {{ c.visits | plus: 1 }} {{ b.custom_id }} {{${time_zone}}}")
        #expect(try template.render(variables, options: options) == "Paul 5 paul Europe/Paris")
        #expect(try MessagePreview.variables(directory: harness.directory, key: "demo/nobody", defaultTimeZone: "UTC") == nil)
    }
}
