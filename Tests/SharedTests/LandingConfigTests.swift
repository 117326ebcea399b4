import Foundation
import Shared
import Testing

/// Landings (issue 60, item 4; batch-rules §8.1): an in-app message attached to a campaign's push in one step.
@Suite("Configuration: landings")
struct LandingConfigTests {
    static let project = #"{"kind":"project","id":"demo"}"#
    static let template = #"{"kind":"template","id":"t","project":"demo","channel":"push","variants":{"default":{"body":"B"}}}"#
    static let landing = #"{"kind":"in_app_message","id":"land","project":"demo","type":"modal","triggers":[],"variants":{"default":{"message":"Hi"}}}"#

    static func campaign(_ message: String) -> String {
        #"{"kind":"campaign","id":"promo","project":"demo","trigger":{"event":"A"},"messages":[\#(message)]}"#
    }

    @Test("a push's landing gets the campaign's push_open trigger once, however many messages name it")
    func attached() throws {
        let twice = #"{"channel":"push","template":"t","landing":"land"},{"channel":"push","template":"t","landing":"land","app":"demo-ios"}"#
        let app = #"{"kind":"app","id":"demo-ios","project":"demo","platform":"ios"}"#
        let (config, issues) = try readConfiguration([Self.project, app, Self.template, Self.landing, Self.campaign(twice)])
        #expect(issues.isEmpty, "\(issues)")
        let triggers = try #require(config.inAppMessages["demo/land"]).triggers
        #expect(triggers.map(\.kind) == [.pushOpen("promo")])
        #expect(config.campaigns["demo/promo"]?.messages.first?.landing == "land")
        // What the app syncs says so (the message's version follows the trigger).
        let synced = try #require(config.inAppMessages["demo/land"]).answerJSON(language: "default", texts: ["message": "Hi"])
        #expect(synced["triggers"]?[0]?["campaign"] == .string("promo"))
    }

    @Test(
        "a landing is named when it cannot be",
        arguments: [
            (#"{"channel":"push","template":"t","landing":"nope"}"#, "campaign promo: messages[0].landing: no in-app message nope in project demo"),
            (#"{"channel":"email","template":"t","landing":"land"}"#, "messages[0].landing: only a push lands on an in-app message when opened"),
            (#"{"channel":"push","template":"t"}"#, "in_app_message land: no triggers: give it one, or attach it to a campaign's push as its `landing`"),
        ])
    func refused(message: String, expected: String) throws {
        let (_, issues) = try readConfiguration([Self.project, Self.template, Self.landing, Self.campaign(message)])
        #expect(issues.contains(expected), "\(issues)")
    }
}
