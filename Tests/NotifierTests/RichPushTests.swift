import CurlClient
import Foundation
import Shared
import Testing

@testable import Notifier

/// The push fields beyond the message (issue 22, rich push): the APNs and FCM requests they make, byte for byte.
@Suite("Rich push: APNs and FCM fields")
struct RichPushTests {
    static let ios = DeliveryTarget(id: "i1", address: token64, installationID: "i1", app: "demo-ios", platform: .ios, environment: .production)
    static let android = DeliveryTarget(id: "a1", address: "fcm-token", installationID: "a1", app: "demo-android", platform: .android, environment: nil)

    static let rich: [String: String] = [
        "title": "Flash sale", "body": "Two hours only", "badge": "3", "sound": "default", "category": "SALE",
        "thread_id": "sales", "interruption_level": "time-sensitive", "relevance_score": "0.8", "target_content_id": "sale-42",
        "image_url": "https://x/i.png", "channel_id": "offers", "click_action": "OPEN_SALE", "priority": "high", "ttl": "2h",
    ]

    @Test("APNs: every field in its place in aps, typed (badge and relevance-score are numbers)")
    func apnsGolden() throws {
        let send = sendRequest(content: Self.rich)
        #expect(String(decoding: APNsProvider.payload(send), as: UTF8.self) == #"""
            {"aps":{"alert":{"title":"Flash sale","body":"Two hours only"},"badge":3,"sound":"default","category":"SALE","thread-id":"sales","interruption-level":"time-sensitive","relevance-score":0.8,"target-content-id":"sale-42","mutable-content":1},"com.herald":{"i":"0123456789abcdef0123456789abcdef","c":"cart","t":"tc","at":{"u":"https://x/i.png","t":"png"}}}
            """#)
        let request = try APNsProvider.request(
            DeliveryAttempt(request: send, target: Self.ios, attempt: 1), topic: "com.example.demo", jwt: "a.b.c", settings: .init())
        let headers = Dictionary(uniqueKeysWithValues: request.headers)
        #expect(headers["apns-push-type"] == "alert" && headers["apns-priority"] == "10")
        // The template's ttl (2 h) is sooner than the default 30 days from the decision.
        #expect(headers["apns-expiration"] == String(1_700_000_001 + 7200))
    }

    @Test("APNs: push_type background says so whatever the body, at priority 5; priority normal on an alert")
    func apnsPushType() throws {
        let background = sendRequest(content: ["push_type": "background", "body": "ignored", "badge": "1"])
        #expect(String(decoding: APNsProvider.payload(background), as: UTF8.self).hasPrefix(#"{"aps":{"content-available":1},"#))
        let request = try APNsProvider.request(
            DeliveryAttempt(request: background, target: Self.ios, attempt: 1), topic: "t", jwt: "a.b.c", settings: .init())
        let headers = Dictionary(uniqueKeysWithValues: request.headers)
        #expect(headers["apns-push-type"] == "background" && headers["apns-priority"] == "5")
        let quiet = try APNsProvider.request(
            DeliveryAttempt(request: sendRequest(content: ["body": "B", "priority": "normal"]), target: Self.ios, attempt: 1),
            topic: "t", jwt: "a.b.c", settings: .init())
        #expect(Dictionary(uniqueKeysWithValues: quiet.headers)["apns-priority"] == "5")
        // An alert with an empty body rendered is still an alert when the template says so.
        let alert = sendRequest(content: ["push_type": "alert", "title": "", "body": ""])
        #expect(!APNsProvider.isBackground(alert))
    }

    /// Issue 34, item 4: what Apple documents, which a request that APNs accepts can still get wrong.
    @Test("APNs: a critical alert's sound dictionary, a silent badge-only push (0 clears it), ttl 0 as expiration 0")
    func apnsDetails() throws {
        let critical = sendRequest(content: ["body": "Gas leak", "interruption_level": "critical", "sound": "alarm.caf"])
        #expect(String(decoding: APNsProvider.payload(critical), as: UTF8.self).hasPrefix(
            #"{"aps":{"alert":{"body":"Gas leak"},"sound":{"critical":1,"name":"alarm.caf","volume":1},"interruption-level":"critical"},"#))
        let criticalDefault = sendRequest(content: ["body": "B", "interruption_level": "critical"])
        #expect(String(decoding: APNsProvider.payload(criticalDefault), as: UTF8.self).contains(#""sound":{"critical":1,"name":"default","volume":1}"#))

        let clear = sendRequest(content: ["badge": "0"])
        #expect(String(decoding: APNsProvider.payload(clear), as: UTF8.self).hasPrefix(#"{"aps":{"badge":0},"#))
        let request = try APNsProvider.request(
            DeliveryAttempt(request: clear, target: Self.ios, attempt: 1), topic: "t", jwt: "a.b.c", settings: .init())
        let headers = Dictionary(uniqueKeysWithValues: request.headers)
        #expect(headers["apns-push-type"] == "alert")
        // On Android a data message: nothing shown, the count for the app to set.
        let android = String(decoding: FCMProvider.message(DeliveryAttempt(request: sendRequest(app: "demo-android", content: ["badge": "0"]), target: Self.android, attempt: 1)), as: UTF8.self)
        #expect(!android.contains(#""notification""#) && android.contains(#""herald_badge":"0""#), "\(android)")

        let nowOrNever = sendRequest(content: ["body": "Your code: 1234", "ttl": "0s"])
        let immediate = try APNsProvider.request(
            DeliveryAttempt(request: nowOrNever, target: Self.ios, attempt: 1), topic: "t", jwt: "a.b.c", settings: .init())
        #expect(Dictionary(uniqueKeysWithValues: immediate.headers)["apns-expiration"] == "0")
        let fcm = String(decoding: FCMProvider.message(DeliveryAttempt(request: sendRequest(app: "demo-android", content: ["body": "B", "ttl": "0s"]), target: Self.android, attempt: 1)), as: UTF8.self)
        #expect(fcm.contains(#""ttl":"0s""#))
    }

    @Test("FCM: the notification, Android's channel, tag, click action, priority and ttl")
    func fcmGolden() throws {
        let now = Date(timeIntervalSince1970: 1_700_000_001)
        let send = sendRequest(app: "demo-android", content: Self.rich)
        #expect(String(decoding: FCMProvider.message(DeliveryAttempt(request: send, target: Self.android, attempt: 1), now: now), as: UTF8.self) == #"""
            {"message":{"token":"fcm-token","notification":{"title":"Flash sale","body":"Two hours only","image":"https://x/i.png"},"data":{"herald_send_id":"0123456789abcdef0123456789abcdef","herald_campaign":"cart","herald_source":"tc","herald_attachment_type":"png"},"android":{"priority":"HIGH","ttl":"7200s","notification":{"tag":"0123456789abcdef0123456789abcdef","channel_id":"offers","click_action":"OPEN_SALE","notification_count":3}}}}
            """#)
        let background = sendRequest(app: "demo-android", content: ["push_type": "background", "body": "x", "tag": "t"])
        #expect(String(decoding: FCMProvider.message(DeliveryAttempt(request: background, target: Self.android, attempt: 1), now: now), as: UTF8.self) == #"""
            {"message":{"token":"fcm-token","data":{"herald_send_id":"0123456789abcdef0123456789abcdef","herald_campaign":"cart","herald_source":"tc"},"android":{"priority":"NORMAL","ttl":"2419200s"}}}
            """#)
    }

    @Test("an attachment's type: the template's, else the URL's file extension when iOS takes it; none otherwise")
    func attachmentTypes() throws {
        func attachment(_ url: String, _ type: String? = nil) throws -> JSONValue? {
            var content = ["body": "B", "image_url": url]
            content["attachment_type"] = type
            return try JSONParser.parse(APNsProvider.payload(sendRequest(content: content)))["com.herald"]?["at"]
        }
        #expect(try attachment("https://cdn/x/clip.MP4?v=2") == .object([JSONMember("u", .string("https://cdn/x/clip.MP4?v=2")), JSONMember("t", .string("mp4"))]))
        #expect(try attachment("https://cdn/img/42", "jpg")?["t"] == .string("jpg"))
        #expect(try attachment("https://cdn/img/42")?["t"] == nil)
        #expect(try attachment("https://cdn/x.pdf")?["t"] == nil)
        #expect(PushOptions.problem("attachment_type", "pdf") != nil && PushOptions.problem("attachment_type", "gif") == nil)
    }

    @Test("badge: a number sets it, +N adds to the installation's count (the target carries the number decided)")
    func badgeForms() throws {
        #expect(PushOptions.badge("3") == .set(3) && PushOptions.badge("0") == .set(0) && PushOptions.badge("+1") == .add(1))
        for bad in ["-1", "+0", "100000", "+100000", "1.5", "+", "", " 1", "+ 1"] {
            #expect(PushOptions.badge(bad) == nil, "\(bad)")
            #expect(PushOptions.problem("badge", bad) != nil, "\(bad)")
        }
        let increment = sendRequest(content: ["body": "B", "badge": "+1"])
        #expect(try JSONParser.parse(APNsProvider.payload(increment))["aps"]?["badge"] == nil)
        #expect(try JSONParser.parse(APNsProvider.payload(increment, badge: 7))["aps"]?["badge"] == .number("7"))
        var target = Self.android
        target.badge = 7
        let message = try JSONParser.parse(FCMProvider.message(DeliveryAttempt(request: increment, target: target, attempt: 1)))
        #expect(message["message"]?["android"]?["notification"]?["notification_count"] == .number("7"))
    }

    @Test("a typed custom payload: APNs gets it at the root as it is, FCM's data as strings (JSON text for the others)")
    func typedPayload() throws {
        let payload: [String: JSONValue] = [
            "screen": "cart", "count": .number("3"), "vip": .bool(true),
            "product": .object([JSONMember("sku", .string("X1")), JSONMember("price", .number("19.5"))]),
        ]
        let send = sendRequest(content: ["body": "B"], payload: payload)
        #expect(String(decoding: APNsProvider.payload(send), as: UTF8.self) == #"""
            {"aps":{"alert":{"body":"B"}},"com.herald":{"i":"0123456789abcdef0123456789abcdef","c":"cart","t":"tc"},"count":3,"product":{"sku":"X1","price":19.5},"screen":"cart","vip":true}
            """#)
        let message = try JSONParser.parse(FCMProvider.message(DeliveryAttempt(request: send, target: Self.android, attempt: 1)))
        #expect(message["message"]?["data"]?["count"] == .string("3"))
        #expect(message["message"]?["data"]?["vip"] == .string("true"))
        #expect(message["message"]?["data"]?["screen"] == .string("cart"))
        #expect(message["message"]?["data"]?["product"] == .string(#"{"sku":"X1","price":19.5}"#))
    }

    @Test("a category's buttons for the target's app: com.herald.a on APNs, herald_actions on FCM; none for another app")
    func categoryActions() throws {
        var send = sendRequest(content: ["body": "Sale", "category": "SALE"])
        let buy = PushAction(id: "BUY", title: "Buy now", deeplink: "demo://buy")
        send.actions = ["demo-ios": [buy, PushAction(id: "NO", title: "No", foreground: false, destructive: true)], "demo-android": [buy]]
        #expect(String(decoding: APNsProvider.payload(send, app: "demo-ios"), as: UTF8.self) == #"""
            {"aps":{"alert":{"body":"Sale"},"category":"SALE"},"com.herald":{"i":"0123456789abcdef0123456789abcdef","c":"cart","t":"tc","a":[{"i":"BUY","t":"Buy now","l":"demo://buy","f":true},{"i":"NO","t":"No","f":false,"d":true}]}}
            """#)
        let request = try APNsProvider.request(DeliveryAttempt(request: send, target: Self.ios, attempt: 1), topic: "t", jwt: "a.b.c", settings: .init())
        #expect(String(decoding: request.body, as: UTF8.self).contains(#""a":[{"i":"BUY""#))
        #expect(!String(decoding: APNsProvider.payload(send, app: "other-ios"), as: UTF8.self).contains(#""a":"#))
        let message = try JSONParser.parse(FCMProvider.message(DeliveryAttempt(request: send, target: Self.android, attempt: 1)))
        #expect(message["message"]?["data"]?["herald_actions"] == .string(#"[{"i":"BUY","t":"Buy now","l":"demo://buy","f":true}]"#))
    }

    @Test("a landing: the in-app message to show on open, com.herald.ld on APNs, herald_landing on FCM")
    func landing() throws {
        var send = sendRequest(content: ["body": "B"])
        send.landing = "spring-looks"
        let apns = try JSONParser.parse(APNsProvider.payload(send))
        #expect(apns["com.herald"]?["ld"] == .string("spring-looks"))
        send.app = "demo-android"
        let fcm = try JSONParser.parse(FCMProvider.message(DeliveryAttempt(request: send, target: Self.android, attempt: 1)))
        #expect(fcm["message"]?["data"]?["herald_landing"] == .string("spring-looks"))
        #expect(try JSONParser.parse(APNsProvider.payload(sendRequest(content: ["body": "B"])))["com.herald"]?["ld"] == nil)
    }

    @Test("a send attempted again after a crash carries the same collapse id and tag: the device shows it once")
    func duplicateCollapses() throws {
        let send = sendRequest(content: ["title": "Hi", "body": "There"])
        func collapse(_ attempt: Int) throws -> String? {
            let request = try APNsProvider.request(
                DeliveryAttempt(request: send, target: Self.ios, attempt: attempt), topic: "t", jwt: "a.b.c", settings: .init())
            return Dictionary(uniqueKeysWithValues: request.headers)["apns-collapse-id"]
        }
        #expect(try collapse(1) == send.sendID && collapse(2) == send.sendID)
        func tag(_ attempt: Int) throws -> String? {
            let message = FCMProvider.message(DeliveryAttempt(request: send, target: Self.android, attempt: attempt))
            return try JSONParser.parse(message)["message"]?["android"]?["notification"]?["tag"]?.stringValue
        }
        #expect(try tag(1) == send.sendID && tag(2) == send.sendID)
        // A template's own collapse id and tag win.
        let own = sendRequest(content: ["body": "B", "collapse_id": "cart", "tag": "cart-tag"])
        let request = try APNsProvider.request(DeliveryAttempt(request: own, target: Self.ios, attempt: 1), topic: "t", jwt: "a.b.c", settings: .init())
        #expect(Dictionary(uniqueKeysWithValues: request.headers)["apns-collapse-id"] == "cart")
        let message = try JSONParser.parse(FCMProvider.message(DeliveryAttempt(request: own, target: Self.android, attempt: 1)))
        #expect(message["message"]?["android"]?["notification"]?["tag"]?.stringValue == "cart-tag")
        #expect(message["message"]?["android"]?["collapse_key"]?.stringValue == "cart")
    }
}
