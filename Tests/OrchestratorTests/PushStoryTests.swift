import Foundation
import HeraldTestSupport
import PartitionStore
import Shared
import Testing

@testable import OrchestratorDomain

/// Push Stories in a campaign (issue 60, item 1): pages rendered with Liquid like any push, sent whole or not at all, and
/// a tap on a page reported back as a click that names it.
@Suite("Push Stories: rendering and page taps", .serialized)
struct PushStoryTests {
    static let template = #"""
        {"kind":"template","id":"looks","project":"demo","channel":"push","variants":{"default":{"title":"New looks, {{ c.first_name | default: \"you\" }}","body":"Swipe through","story":[
          {"image_url":"https://cdn.example.com/a.jpg","title":"Look one","deeplink":"demo://looks/1"},
          {"image_url":"{{ c.look_image }}","image_type":"png","title":"{{ event.product }}","subtitle":"For {{ c.first_name | default: \"you\" }}","id":"look-2"}]}}}
        """#
    static let campaign = #"{"kind":"campaign","id":"spring","name":"Spring","project":"demo","type":"transactional","trigger":{"event":"BROWSED"},"reeligibility":"always","messages":[{"channel":"push","template":"looks"}]}"#

    @Test("the pages render from the profile and the event into the send; an http image fails the send whole, named")
    func renders() async throws {
        let harness = try await EngagementHarness(try configuration(demoProject, Self.template, Self.campaign))
        try await harness.apply([
            try harness.writer.update(id: "p", #"{"first_name":"Ana","look_image":"https://cdn.example.com/ana.png"}"#),
            try harness.writer.event(id: "e1", #"{"name":"browsed","attributes":{"product":"Linen shirt"}}"#),
        ])
        let send = try #require(try harness.sends().first, "\(harness.deadLetters.map(\.reason))")
        #expect(send.content["title"] == "New looks, Ana")
        #expect(send.content["story.2.image_url"] == "https://cdn.example.com/ana.png")
        #expect(send.content["story.2.title"] == "Linen shirt" && send.content["story.2.subtitle"] == "For Ana")
        #expect(PushStory.pages(send.content).map(\.id) == ["page-1", "look-2"])

        // A profile value over http: nothing sent, a dead letter naming the page's field.
        try await harness.apply([
            try harness.writer.update(id: "p2", #"{"look_image":"http://cdn.example.com/ana.png"}"#),
            try harness.writer.event(id: "e2", #"{"name":"browsed","attributes":{"product":"Linen shirt"}}"#),
        ])
        #expect(try harness.sends().count == 1)
        let letter = try #require(harness.deadLetters.last)
        #expect(letter.reason.contains("looks.default.story.2.image_url: expected an https:// URL"), "\(letter.reason)")
        // A missing value without a default fails it as any field does.
        try await harness.apply([
            try harness.writer.update(id: "p3", #"{"look_image":"https://cdn.example.com/ana.png"}"#),
            try harness.writer.event(id: "e3", #"{"name":"browsed"}"#),
        ])
        #expect(try harness.sends().count == 1)
        #expect(harness.deadLetters.last?.reason.contains("looks.default.story.2.title") == true, "\(harness.deadLetters.last?.reason ?? "")")
    }

    @Test("a story too large once rendered is a dead letter naming its largest field")
    func tooLarge() async throws {
        // The second page's subtitle repeats the event's product 30 times: 6,000 bytes for a 200-character product.
        let template = Self.template.replacingOccurrences(
            of: #""subtitle":"For {{ c.first_name | default: \"you\" }}""#,
            with: #""subtitle":"{% for i in (1..30) %}{{ event.product }}{% endfor %}""#)
        let harness = try await EngagementHarness(try configuration(demoProject, template, Self.campaign))
        let product = String(repeating: "x", count: 200)
        try await harness.apply([
            try harness.writer.update(id: "p", #"{"look_image":"https://cdn.example.com/ana.png"}"#),
            try harness.writer.event(id: "e1", #"{"name":"browsed","attributes":{"product":"\#(product)"}}"#),
        ])
        #expect(try harness.sends().isEmpty)
        let letter = try #require(harness.deadLetters.last)
        #expect(letter.reason.contains("looks.default.story.2.subtitle: the story takes"), "\(letter.reason)")
        // A short product fits.
        try await harness.apply([try harness.writer.event(id: "e2", #"{"name":"browsed","attributes":{"product":"Linen"}}"#)])
        #expect(try harness.sends().count == 1)
    }

    @Test("a page tapped: a clicked report naming the page, and a push_open trigger that can read it")
    func pageTap() async throws {
        let config = try configuration(
            demoProject, Self.template, Self.campaign,
            #"{"kind":"template","id":"more","project":"demo","channel":"push","variants":{"default":{"body":"More like {{ event.page }}"}}}"#,
            #"{"kind":"campaign","id":"more","project":"demo","type":"transactional","trigger":{"push_open":true,"where":"event.page = \"look-2\""},"reeligibility":"always","messages":[{"channel":"push","template":"more"}]}"#)
        let harness = try await EngagementHarness(config)
        harness.writer.source = .app(id: "ios", dev: false)
        try await harness.apply([harness.writer.record(.identify, id: "i1", installationID: "I")])
        try await AppActivityTests.delivered(harness, send: "S", installation: "I", campaign: "spring")
        var fields = [JSONMember("send_id", .string("S")), JSONMember("page", .string("look-2"))]
        fields.append(JSONMember("time", .string(WireTime.format(t0 + 5))))
        try await harness.apply([
            harness.writer.record(.pushOpen, id: "tap", installationID: "I", fields: [JSONMember("push_open", .object(fields))])
        ])
        let reports = try harness.outbox.filter { $0.topic == HeraldTopic.deliveries.name }.map {
            try Wire.decode(DeliveryReport.self, from: $0.value ?? [])
        }
        #expect(reports.map(\.outcome) == [.clicked])
        #expect(reports.first?.page == "look-2" && reports.first?.action == nil && reports.first?.campaign == "spring")
        #expect(try harness.sends().map { $0.content["body"] } == ["More like look-2"])
    }
}
