import Foundation
import Liquid
import Shared
import Testing

/// Push Stories in a push template (issue 60, item 1; braze-rules §5.8): what `herald config validate` refuses, and the
/// fields a story becomes.
@Suite("Push Stories: the template's rules")
struct PushStoryConfigTests {
    static let project = #"{"kind":"project","id":"demo"}"#
    static let page1 = #"{"image_url":"https://cdn.example.com/a.jpg","title":"Look one","subtitle":"Linen","deeplink":"demo://looks/1"}"#
    static let page2 = #"{"image_url":"https://cdn.example.com/b.png","title":"Look two"}"#

    func read(_ variant: String, payload: String? = nil) throws -> (HeraldConfiguration, [String]) {
        let template = #"{"kind":"template","id":"s","project":"demo","channel":"push","variants":{"default":\#(variant)}"#
            + (payload.map { #","payload":\#($0)"# } ?? "") + "}"
        return try readConfiguration([Self.project, template])
    }

    static func story(_ pages: String...) -> String { "[\(pages.joined(separator: ","))]" }

    @Test("a story's pages become fields story.<n>.<field>, with default ids and alignments; no problem")
    func fields() throws {
        let (config, issues) = try read(#"{"title":"New looks","body":"Swipe through","story":\#(Self.story(Self.page1, Self.page2))}"#)
        #expect(issues.isEmpty, "\(issues)")
        let fields = try #require(config.templates["demo/s"]?.variants["default"])
        #expect(fields["story.1.image_url"]?.source == "https://cdn.example.com/a.jpg")
        #expect(fields["story.1.deeplink"]?.source == "demo://looks/1")
        #expect(fields["story.2.title"]?.source == "Look two")
        #expect(fields["story.1.id"]?.source == "page-1" && fields["story.2.id"]?.source == "page-2")
        #expect(fields["story"] == nil)
    }

    @Test(
        "every problem of a story is named with its page",
        arguments: [
            (#"{"title":"T","body":"B","story":[\#(page1)]}"#, "variants.default.story: expected a list of at least 2 pages ({image_url, title, subtitle, deeplink}), found 1 page(s)"),
            (#"{"title":"T","body":"B","story":"x"}"#, "variants.default.story: expected a list of at least 2 pages ({image_url, title, subtitle, deeplink}), found a string"),
            (#"{"title":"T","body":"B","story":[\#(page1),{"title":"x"}]}"#, "variants.default.story.2: missing `image_url`"),
            (#"{"title":"T","body":"B","story":[\#(page1),{"image_url":"https://x/b.jpg"}]}"#, "variants.default.story.2: missing `title`"),
            (#"{"title":"T","body":"B","story":[\#(page1),{"image_url":"http://x/b.jpg","title":"t"}]}"#,
             #"variants.default.story.2.image_url: expected an https:// URL, found "http://x/b.jpg" (an image over http crashes the story extension)"#),
            (#"{"title":"T","body":"B","story":[\#(page1),{"image_url":"http://x/{{ c.img }}.jpg","title":"t"}]}"#,
             #"variants.default.story.2.image_url: expected an https:// URL, found "http://x/{{ c.img }}.jpg" (an image over http crashes the story extension)"#),
            (#"{"title":"T","body":"B","story":[\#(page1),{"image_url":"https://x/b","title":"t"}]}"#,
             "variants.default.story.2.image_url: its path ends in none of gif, jpeg, jpg, png; set `image_type`"),
            (#"{"title":"T","body":"B","story":[\#(page1),{"image_url":"https://x/b","title":"t","image_type":"mp4"}]}"#,
             #"variants.default.story.2.image_type: expected one of gif, jpeg, jpg, png, found "mp4""#),
            (#"{"title":"T","body":"B","story":[\#(page1),{"image_url":"https://x/b.jpg","title":"t","title_align":"middle"}]}"#,
             #"variants.default.story.2.title_align: expected left, center or right, found "middle""#),
            (#"{"title":"T","body":"B","story":[\#(page1),{"image_url":"https://x/b.jpg","title":"t","id":"page-1"}]}"#,
             #"variants.default.story.2.id: "page-1" is already page 1's id (a tap reports the page by it)"#),
            (#"{"title":"T","body":"B","story":[\#(page1),{"image_url":"https://x/b.jpg","title":"t","colour":"red"}]}"#,
             "variants.default.story.2: unknown field `colour`"),
            (#"{"body":"B","story":[\#(page1),\#(page2)]}"#,
             "variants.default: missing `title` (a story's fallback alert, shown while its images load or if they fail)"),
            (#"{"title":"T","body":"B","image_url":"https://x/i.png","story":[\#(page1),\#(page2)]}"#,
             "variants.default.image_url: not sent with a story (a background push); a story takes badge, body, category, collapse_id, deeplink, priority, push_type, sound, story, title, ttl"),
            (#"{"title":"T","body":"B","push_type":"alert","story":[\#(page1),\#(page2)]}"#,
             "variants.default.push_type: a story is a background push (the app's SDK posts it once its images are in)"),
            (#"{"title":"T","body":"B","priority":"high","story":[\#(page1),\#(page2)]}"#,
             "variants.default.priority: a story is a background push, which goes at `priority: normal` (APNs refuses high)"),
        ])
    func problems(variant: String, expected: String) throws {
        let (_, issues) = try read(variant)
        #expect(issues.contains(expected), "\(issues)")
    }

    @Test("a story's custom payload may not take its layout's keys; its fixed text over 4,096 bytes is refused")
    func payloadAndSize() throws {
        let variant = #"{"title":"T","body":"B","story":\#(Self.story(Self.page1, Self.page2))}"#
        let (_, taken) = try read(variant, payload: #"{"c_items":"x"}"#)
        #expect(taken.contains("payload.c_items: taken by the story's layout (ab, ab_carousel, apple, c_items)"), "\(taken)")
        let long = String(repeating: "x", count: 4000)
        let (_, large) = try read(#"{"title":"T","body":"B","story":[\#(Self.page1),{"image_url":"https://x/b.jpg","title":"\#(long)"}]}"#)
        #expect(large.contains { $0.hasPrefix("variants.default: its fixed text and payload take ") }, "\(large)")
    }

    @Test("the page ids a campaign's stories tell, for counting taps")
    func pageIDs() throws {
        let template = #"{"kind":"template","id":"s","project":"demo","channel":"push","variants":{"default":{"title":"T","body":"B","story":[\#(Self.page1),{"image_url":"https://x/b.jpg","title":"t","id":"look-2"}]}}}"#
        let campaign = #"{"kind":"campaign","id":"c","name":"C","project":"demo","trigger":{"event":"A"},"messages":[{"channel":"push","template":"s"}]}"#
        let (config, issues) = try readConfiguration([Self.project, template, campaign])
        #expect(issues.isEmpty, "\(issues)")
        #expect(config.storyPageIDs(project: "demo", campaign: "c") == ["page-1", "look-2"])
        #expect(config.storyPageIDs(project: "demo", campaign: "other").isEmpty)
    }

    @Test(
        "rendered pages: refused as a whole when a page is incomplete or its image not HTTPS",
        arguments: [
            (["story.1.image_url": "http://x/a.jpg", "story.1.title": "a", "story.2.image_url": "https://x/b.jpg", "story.2.title": "b"],
             "story.1.image_url"),
            (["story.1.image_url": "https://x/a.jpg", "story.1.title": " ", "story.2.image_url": "https://x/b.jpg", "story.2.title": "b"],
             "story.1.title"),
            (["story.1.image_url": "https://x/a.jpg", "story.1.title": "a", "story.2.image_url": "", "story.2.title": "b"],
             "story.2.image_url"),
            (["story.1.image_url": "https://x/a.jpg", "story.1.title": "a", "story.2.image_url": "https://x/b", "story.2.title": "b"],
             "story.2.image_url"),
            (["story.1.image_url": "https://x/a.jpg", "story.1.title": "a", "story.1.deeplink": "javascript:alert(1)",
              "story.2.image_url": "https://x/b.jpg", "story.2.title": "b"], "story.1.deeplink"),
            (["story.1.image_url": "https://x/a.jpg", "story.1.title": "a"], "story"),
        ])
    func renderedProblems(content: [String: String], field: String) {
        #expect(PushStory.problem(content)?.field == field)
    }
}
