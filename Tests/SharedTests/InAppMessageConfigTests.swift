import Foundation
import Shared
import Testing

/// `kind: in_app_message` (issue 35, item 2): what a message may be, each problem named by its field.
@Suite("Configuration: in-app messages")
struct InAppMessageConfigTests {
    static let project = #"{"kind":"project","id":"demo"}"#
    static let segment = #"{"kind":"segment","id":"vip","project":"demo","condition":"c.plan = \"gold\""}"#

    /// A valid modal with two buttons; `change` replaces or adds top-level fields.
    static func message(_ change: String = "") -> String {
        #"""
        {"kind":"in_app_message","id":"sale","project":"demo","type":"modal","priority":80,
         "triggers":[{"session_start":true},{"event":"add_to_cart","where":"event.price > 50","delay":"2s"},
                     {"purchase":"any"},{"purchase":"SKI-1"},{"push_open":"any"}],
         "audience":"vip","reeligibility":{"max":3,"per":"365d"},"start":"2026-12-01T00:00:00Z","end":"2026-12-31T00:00:00Z",
         "buttons":[{"id":"shop","action":{"uri":"demo://shop"}},{"id":"later","action":"dismiss"}],
         "extras":{"appstore_review":"true"},
         "variants":{"default":{"header":"Sale","message":"Hi {{ c.first_name | default: \"there\" }}","button.shop":"Shop","button.later":"Later"},
                     "fr":{"message":"Bonjour","button.shop":"Voir","button.later":"Plus tard"}}\#(change)}
        """#
    }

    func read(_ objects: [String]) throws -> (HeraldConfiguration, [String]) { try readConfiguration(objects) }

    @Test("a valid message reads whole: triggers with their conditions and delays, buttons, the schedule, defaults")
    func valid() throws {
        let (config, issues) = try read([Self.project, Self.segment, Self.message()])
        #expect(issues == [])
        let message = try #require(config.inAppMessages["demo/sale"])
        #expect(message.kind == .modal && message.priority == 80 && message.audience == "vip")
        #expect(message.triggers.map(\.kind) == [.sessionStart, .event("ADD_TO_CART"), .purchase(nil), .purchase("SKI-1"), .pushOpen(nil)])
        #expect(message.triggers[1].conditionText == "event.price > 50" && message.triggers[1].delay == 2)
        #expect(message.buttons.map(\.id) == ["shop", "later"] && message.buttons[0].action == .uri("demo://shop"))
        #expect(message.minTriggerInterval == 30 && message.autoDismiss == nil && message.orientation == "any")
        #expect(message.reeligibility == .limit(count: 3, period: 365 * 86_400))
        #expect(message.isLive(at: WireTime.parse("2026-12-15T00:00:00Z")!))
        #expect(!message.isLive(at: WireTime.parse("2026-12-31T00:00:00Z")!))
        #expect(!message.isLive(at: WireTime.parse("2026-11-30T23:59:59Z")!))
        // A slideup goes by itself after 5 s unless told.
        let (slide, _) = try read([
            Self.project,
            #"{"kind":"in_app_message","id":"s","project":"demo","type":"slideup","triggers":[{"session_start":true}],"variants":{"default":{"message":"Hi"}}}"#,
        ])
        #expect(slide.inAppMessages["demo/s"]?.autoDismiss == 5)
    }

    @Test(
        "every problem is named",
        arguments: [
            (#","type":"popup""#, #"type: expected slideup, modal, full or html, found "popup""#),
            (#","priority":101"#, "priority: expected a whole number from 0 to 100 (higher shows first)"),
            (#","triggers":[]"#, "in_app_message sale: no triggers: give it one, or attach it to a campaign's push as its `landing`"),
            (#","triggers":{"event":"A"}"#, "triggers: expected a list of up to 20 triggers (session_start, event, purchase, push_open)"),
            (#","triggers":[{"shake":true}]"#, "triggers[0]: expected session_start, event, purchase or push_open, found `shake`"),
            (#","triggers":[{"event":"add to cart"}]"#, #"triggers[0].event: "add to cart" is not an event name (1 to 30 letters, digits or underscores)"#),
            (#","triggers":[{"session_start":true,"where":"event.price > 3"}]"#,
             "event.price: a session_start trigger has event.app, event.session_id"),
            (#","triggers":[{"event":"A","delay":"2h"}]"#, "triggers[0].delay: expected a duration up to 1h"),
            (#","triggers":[{"push_open":"nope"}]"#, "in_app_message sale: triggers[0].push_open: no campaign nope in project demo"),
            (#","audience":"gone""#, "in_app_message sale: audience: no segment gone in project demo"),
            (#","end":"2026-11-01T00:00:00Z""#, "end: not after start"),
            (#","start":"soon""#, #"start: expected an ISO-8601 time such as 2026-12-01T09:00:00Z, found "soon""#),
            (#","buttons":[{"id":"shop","action":"dismiss"},{"id":"later","action":"dismiss"},{"id":"c","action":"feed"}]"#,
             "buttons: a modal message has at most 2 buttons"),
            (#","buttons":[{"id":"shop","action":{"uri":"no scheme"}},{"id":"later","action":"dismiss"}]"#,
             "buttons[0].action.uri: expected a URI with a scheme, at most 2048 characters, such as demo://sale"),
            (#","buttons":[{"id":"shop","action":{"uri":"JavaScript:alert(1)"}},{"id":"later","action":"dismiss"}]"#,
             "buttons[0].action.uri: a link the app opens never has the scheme data, file, javascript, vbscript"),
            (#","variants":{"default":{"message":"Hi","image_url":"data:text/html,<script>x</script>","button.shop":"S","button.later":"L"}}"#,
             "variants.default.image_url: expected a URL with a scheme and a host, such as https://example.com/sale.png (never data, file, javascript, vbscript)"),
            (#","click_action":"feed""#, "click_action: a message with buttons acts only through them (its body is not clickable)"),
            (#","dismiss":"forever""#, #"dismiss: expected manual or a duration up to 1h such as 5s, found "forever""#),
            (#","orientation":"upside-down""#, #"orientation: expected any, portrait or landscape, found "upside-down""#),
            (#","asset_url":"https://example.com/a.zip""#, "asset_url: only an html message has one"),
            (#","extras":{"n":{"deep":1}}"#, "extras.n: expected a string of at most 1024 characters under a key of 1 to 255"),
            (#","min_trigger_interval":"2d""#, #"min_trigger_interval: expected a duration up to 1d such as 30s, found "2d""#),
            (#","reeligibility":{"max":1001,"per":"1d"}"#, "reeligibility.max: an in-app message is shown at most 1000 times per period"),
            (#","variants":{"default":{"message":"Hi {{ event.price }}","button.shop":"S","button.later":"L"}}"#,
             "variants.default.message: `event` is not known when the app syncs (an in-app message reads the profile: c., b. and Braze's standard attributes)"),
            (#","variants":{"default":{"message":"Hi","button.shop":"S"}}"#, "variants.default: missing `button.later` (the button's text)"),
            (#","variants":{"default":{"header":"Hi","button.shop":"S","button.later":"L"}}"#, "variants.default: missing `message`"),
            (#","variants":{"default":{"message":"Hi","button.buy":"B","button.shop":"S","button.later":"L"}}"#,
             "variants.default.button.buy: not a field of this message (header, message, image_url, and button.<id> for each of its buttons)"),
            (#","colour":"red""#, "in_app_message: unknown field `colour`"),
        ])
    func problems(change: String, message: String) throws {
        let (config, issues) = try read([Self.project, Self.segment, Self.message(change)])
        #expect(issues == [message])
        _ = config
    }

    @Test("types: a full message needs an image; an html one its asset bundle and no buttons")
    func types() throws {
        func read(_ fields: String) throws -> [String] {
            try self.read([Self.project, #"{"kind":"in_app_message","id":"m","project":"demo","triggers":[{"session_start":true}],\#(fields)}"#]).1
        }
        #expect(try read(#""type":"full","variants":{"default":{"message":"Hi"}}"#) == ["variants.default: missing `image_url` (a full message shows an image)"])
        #expect(try read(#""type":"full","variants":{"default":{"message":"Hi","image_url":"https://example.com/i.png"}}"#) == [])
        #expect(try read(#""type":"html","variants":{"default":{}}"#) == ["missing `asset_url`: an html message loads its assets from it"])
        #expect(try read(#""type":"html","asset_url":"http://example.com/a.zip","variants":{"default":{}}"#)
            == ["asset_url: expected an https URL (the HTML message's asset bundle)"])
        #expect(try read(#""type":"html","asset_url":"https://example.com/a.zip","variants":{"default":{}}"#) == [])
        #expect(try read(#""type":"slideup","buttons":[{"id":"a","action":"dismiss"}],"variants":{"default":{"message":"Hi","button.a":"A"}}"#)
            == ["buttons: a slideup message has no buttons", "variants.default.button.a: not a field of this message (header, message, image_url, and button.<id> for each of its buttons)"])
    }
}
