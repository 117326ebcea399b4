import CurlClient
import Foundation
import Shared
import Testing

@testable import Notifier

/// A Push Story as it leaves (issue 60, item 1; braze-rules §5.8): Braze's Push Story layout on APNs, byte for byte, as
/// a background push; the same pages as data on FCM.
@Suite("Push Stories: the payload")
struct PushStoryPayloadTests {
    static let story: [String: String] = [
        "title": "New looks", "body": "Swipe through", "sound": "default",
        "story.1.image_url": "https://cdn.example.com/a.JPG?w=600", "story.1.title": "Look one", "story.1.subtitle": "Linen",
        "story.1.deeplink": "demo://looks/1", "story.1.id": "page-1",
        "story.2.image_url": "https://cdn.example.com/b", "story.2.image_type": "png", "story.2.title": "Look two",
        "story.2.title_align": "left", "story.2.id": "look-2",
    ]

    @Test("APNs: aps content-available and the category, ab.type 7, ab_carousel 1, apple.alert, c_items with every key")
    func apnsLayout() throws {
        let send = sendRequest(content: Self.story, payload: ["screen": .string("looks")])
        #expect(String(decoding: APNsProvider.payload(send, badge: 4), as: UTF8.self) == #"""
            {"aps":{"content-available":1,"category":"ab_cat_push_story_v2"},"ab":{"type":7},"ab_carousel":1,"apple":{"alert":{"title":"New looks","body":"Swipe through","badge":4,"sound":"default"}},"c_items":[{"i":"https://cdn.example.com/a.JPG?w=600","i_t":"jpg","t":"Look one","t_j":"center","st":"Linen","st_j":"center","uri":"demo://looks/1","id":"page-1"},{"i":"https://cdn.example.com/b","i_t":"png","t":"Look two","t_j":"left","st":"","st_j":"center","uri":"","id":"look-2"}],"com.herald":{"i":"0123456789abcdef0123456789abcdef","c":"cart","t":"tc"},"screen":"looks"}
            """#)
        let request = try APNsProvider.request(
            DeliveryAttempt(request: send, target: RichPushTests.ios, attempt: 1), topic: "com.example.demo", jwt: "a.b.c", settings: .init())
        let headers = Dictionary(uniqueKeysWithValues: request.headers)
        #expect(headers["apns-push-type"] == "background" && headers["apns-priority"] == "5")
    }

    @Test("APNs: the template's category replaces the default (an app on Braze's older SDK claims ab_cat_push_story)")
    func category() {
        var content = Self.story
        content["category"] = "ab_cat_push_story"
        let payload = String(decoding: APNsProvider.payload(sendRequest(content: content)), as: UTF8.self)
        #expect(payload.hasPrefix(#"{"aps":{"content-available":1,"category":"ab_cat_push_story"},"#), "\(payload)")
    }

    @Test("FCM: a data message with the pages as JSON text in herald_story_pages and the fallback alert")
    func fcmData() throws {
        let attempt = DeliveryAttempt(request: sendRequest(app: "demo-android", content: Self.story), target: RichPushTests.android, attempt: 1)
        let message = try JSONParser.parse(FCMProvider.message(attempt))
        #expect(message["message"]?["notification"] == nil)
        let data = try #require(message["message"]?["data"])
        #expect(data["herald_story_title"]?.stringValue == "New looks" && data["herald_story_body"]?.stringValue == "Swipe through")
        let pages = try JSONParser.parse(Array(try #require(data["herald_story_pages"]?.stringValue).utf8))
        guard case .array(let items) = pages else { Issue.record("not a list: \(pages)"); return }
        #expect(items.count == 2)
        #expect(items[1]["id"]?.stringValue == "look-2" && items[1]["i_t"]?.stringValue == "png" && items[0]["uri"]?.stringValue == "demo://looks/1")
    }

    @Test("a story too large after rendering is named by its largest field, never cut")
    func sizeProblem() throws {
        var content = Self.story
        content["story.2.subtitle"] = String(repeating: "é", count: 2100)
        let problem = try #require(PushStoryPayload.sizeProblem(content, payload: nil, herald: 60))
        #expect(problem.field == "story.2.subtitle")
        #expect(problem.reason.contains("APNs takes 4096") && problem.reason.contains("holds 4200"), "\(problem.reason)")
        #expect(PushStoryPayload.sizeProblem(Self.story, payload: nil, herald: 60) == nil)
    }
}
