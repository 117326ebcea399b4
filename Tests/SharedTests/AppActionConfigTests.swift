import Foundation
import Shared
import Testing

/// Batch Actions (issue 60, item 4; batch-rules §8.4): in-app buttons, push buttons and cards take an action whose
/// arguments `herald config validate` checks, each problem named.
@Suite("Configuration: app actions")
struct AppActionConfigTests {
    static let project = #"{"kind":"project","id":"demo"}"#

    /// An in-app message whose one button runs `action` (JSON).
    static func message(_ action: String) -> String {
        #"{"kind":"in_app_message","id":"m","project":"demo","type":"modal","triggers":[{"session_start":true}],"buttons":[{"id":"go","action":\#(action)}],"variants":{"default":{"message":"Hi","button.go":"Go"}}}"#
    }

    @Test(
        "valid actions: every builtin with its arguments, a group, an app's own, identifiers in any case",
        arguments: [
            #"{"id":"batch.dismiss"}"#,
            #"{"id":"batch.deeplink","args":{"l":"demo://sale","li":true}}"#,
            #"{"id":"BATCH.User.Tag","args":{"a":"add","c":"interests","t":"ski"}}"#,
            #"{"id":"batch.user.event","args":{"e":"tapped_sale","l":"spring","t":["promo"],"a":{"price":9.5}}}"#,
            #"{"id":"batch.group","args":{"actions":[["batch.user.tag",{"a":"remove","c":"interests","t":"golf"}],["batch.dismiss"]]}}"#,
            #"{"id":"batch.clipboard","args":{"t":"SPRING10"}}"#,
            #"{"id":"batch.rating"}"#, #"{"id":"batch.ios_request_notifications"}"#, #"{"id":"batch.ios_tracking_consent"}"#,
            #"{"id":"open_chat","args":{"topic":"billing"}}"#,
        ])
    func valid(action: String) throws {
        let (config, issues) = try readConfiguration([Self.project, Self.message(action)])
        #expect(issues.isEmpty, "\(issues)")
        guard case .action(let parsed)? = config.inAppMessages["demo/m"]?.buttons.first?.action else {
            Issue.record("not an action")
            return
        }
        #expect(parsed.id == parsed.id.lowercased())
    }

    @Test(
        "every problem of an action is named, under the button",
        arguments: [
            (#"{"id":"batch.teleport"}"#, "buttons[0].action.id: batch.teleport: the batch. prefix is Batch's, and it has no such action"),
            (#"{"id":"batch.deeplink"}"#, "buttons[0].action.args: missing `l` (batch.deeplink)"),
            (#"{"id":"batch.deeplink","args":{"l":"javascript:alert(1)"}}"#, "buttons[0].action.args.l: expected a URL with a scheme, such as demo://sale"),
            (#"{"id":"batch.deeplink","args":{"l":"demo://x","li":"yes"}}"#, "buttons[0].action.args.li: expected true or false (open the link inside the app)"),
            (#"{"id":"batch.deeplink","args":{"l":"demo://x","target":"_blank"}}"#, "buttons[0].action.args.target: not an argument of batch.deeplink (l, li)"),
            (#"{"id":"batch.user.tag","args":{"a":"toggle","c":"interests","t":"ski"}}"#, "buttons[0].action.args.a: expected add or remove"),
            (#"{"id":"batch.user.tag","args":{"a":"add","c":"my interests","t":"ski"}}"#, "buttons[0].action.args.c: expected a collection: an attribute name"),
            (#"{"id":"batch.user.tag","args":{"a":"add","c":"interests"}}"#, "buttons[0].action.args: missing `t` (batch.user.tag)"),
            (#"{"id":"batch.user.event","args":{"e":"tapped sale"}}"#, "buttons[0].action.args.e: "),
            (#"{"id":"batch.user.event","args":{"e":"tapped","t":"promo"}}"#, "buttons[0].action.args.t: "),
            (#"{"id":"batch.group","args":{"actions":[["batch.group",{"actions":[]}]]}}"#, "buttons[0].action.args.actions[0].id: a batch.group never holds another"),
            (#"{"id":"batch.group","args":{"actions":[["batch.user.tag",{"a":"add"}]]}}"#, "buttons[0].action.args.actions[0].args: missing `c` (batch.user.tag)"),
            (#"{"id":"batch.group","args":{"actions":\#(Self.eleven)}}"#, "buttons[0].action.args.actions: a group holds at most 10 actions, found 11"),
            (#"{"id":"batch.group","args":{"actions":[{"id":"batch.dismiss"}]}}"#, "buttons[0].action.args.actions[0]: expected [id, {args}]"),
            (#"{"id":"open chat"}"#, #"buttons[0].action.id: an action id is 1 to 64 letters, digits, `_`, `-` or `.`, found "open chat""#),
            (#"{"id":"open_chat","args":[1]}"#, "buttons[0].action.args: expected a mapping of arguments"),
            (#"{"id":"batch.dismiss","run":true}"#, "buttons[0].action: unknown field `run`"),
        ])
    func problems(action: String, expected: String) throws {
        let (_, issues) = try readConfiguration([Self.project, Self.message(action)])
        #expect(issues.contains { $0.hasPrefix(expected) }, "\(issues)")
    }

    static let eleven = "[" + Array(repeating: #"["batch.dismiss"]"#, count: 11).joined(separator: ",") + "]"

    @Test("an action's profile writes: a tag edit, an event with its label, tags and data; a group's in order")
    func profileWrites() {
        let group = AppAction(
            id: "batch.group",
            args: .object([JSONMember("actions", .array([
                .array([.string("batch.user.tag"), .object([JSONMember("a", .string("add")), JSONMember("c", .string("interests")), JSONMember("t", .string("ski"))])]),
                .array([.string("batch.dismiss")]),
                .array([.string("batch.user.event"), .object([JSONMember("e", .string("liked")), JSONMember("l", .string("spring"))])]),
            ]))]))
        #expect(group.profileWrites == [
            .tag(add: true, collection: "interests", tag: "ski"),
            .event(.object([JSONMember("name", .string("liked")), JSONMember("attributes", .object([JSONMember("$label", .string("spring"))]))])),
        ])
        #expect(AppAction(id: "batch.deeplink", args: .object([JSONMember("l", .string("demo://x"))])).profileWrites.isEmpty)
    }

    @Test("push buttons and cards take an action; the app receives it (com.herald.a[].x, the card's action)")
    func pushAndCards() throws {
        let app = #"{"kind":"app","id":"ios","project":"demo","platform":"ios","categories":{"SALE":{"actions":[{"id":"LIKE","title":"Like","action":{"id":"batch.user.tag","args":{"a":"add","c":"interests","t":"sale"}}}]}}}"#
        let card = #"{"kind":"content_card","id":"c","project":"demo","type":"classic","action":{"id":"batch.user.event","args":{"e":"card_tapped"}},"variants":{"default":{"title":"T","description":"D"}}}"#
        let (config, issues) = try readConfiguration([Self.project, app, card])
        #expect(issues.isEmpty, "\(issues)")
        let button = try #require(config.apps["demo/ios"]?.categories["SALE"]?.first)
        #expect(button.json["x"]?["id"] == .string("batch.user.tag"))
        let delivered = try #require(config.contentCards["demo/c"]).card(
            id: "x", language: "default", texts: ["title": "T", "description": "D"], createdAt: Date(), updatedAt: Date(),
            expiresAt: Date(), viewed: false, clicked: false)
        #expect(delivered["action"]?["args"]?["e"] == .string("card_tapped"))
        let (_, refused) = try readConfiguration([
            Self.project,
            #"{"kind":"content_card","id":"c","project":"demo","type":"classic","action":{"id":"batch.user.tag"},"variants":{"default":{"title":"T","description":"D"}}}"#,
        ])
        #expect(refused.contains("action.args: missing `a` (batch.user.tag)"), "\(refused)")
    }
}
