import Foundation
import GRDB
import HeraldTestSupport
import ServiceSupport
import Shared
import Testing

@testable import PartitionStore
@testable import OrchestratorDomain

/// The tag of an in-app answer is a digest of its inputs (`InAppAnswerTag`), known before any message is rendered: an
/// app revalidating with it gets no body while nothing the answer reads changed, and a new answer when anything did.
@Suite("In-app messages: the answer's tag")
struct InAppAnswerTagTests {
    static func config(greeting: String = "Hi {{ c.first_name | default: \"you\" }}", extra: [String] = []) throws -> HeraldConfiguration {
        try configuration(
            [
                demoProject,
                #"{"kind":"segment","id":"vip","project":"demo","condition":"c.plan = \"gold\""}"#,
                #"""
                {"kind":"in_app_message","id":"hello","project":"demo","type":"modal","priority":80,"reeligibility":"always",
                 "triggers":[{"session_start":true}],"buttons":[{"id":"go","action":{"uri":"demo://go"}}],
                 "variants":{"default":{"message":\#(JSONValue.string(greeting).serializedText),"button.go":"Go"},"fr":{"message":"Salut {{ c.first_name | default: \"toi\" }}","button.go":"Allez"}}}
                """#,
                #"{"kind":"in_app_message","id":"vip","project":"demo","type":"slideup","audience":"vip","reeligibility":{"max":1,"per":"1d"},"triggers":[{"session_start":true}],"variants":{"default":{"message":"Gold"}}}"#,
            ] + extra)
    }

    /// The answer of paul's installation `I` at the harness's time, under `config` (the harness's by default), and
    /// whether an app holding `tag` would get no body.
    func answer(_ harness: EngagementHarness, config: HeraldConfiguration? = nil, revalidating tag: String? = nil) async throws
        -> InAppEligibility.Answer
    {
        let config = config ?? harness.rules.config
        let now = harness.clock.now
        return try #require(
            try await harness.database.read { db in
                try InAppEligibility(db: db, config: config, now: now).answer(key: "demo/paul", installationID: "I") { $0 == tag }
            })
    }

    @Test("the same inputs: the same tag, and no body for an app that holds it; each input changes it")
    func inputs() async throws {
        let harness = try await EngagementHarness(try Self.config())
        harness.writer.source = .app(id: "ios", dev: false)
        try await harness.apply([
            harness.writer.record(.identify, id: "i1", installationID: "I"), harness.writer.record(.identify, id: "i2", installationID: "J"),
        ])
        let first = try await answer(harness)
        #expect(first.json?["messages"]?[0]?["message"] == .string("Hi you"))
        let again = try await answer(harness, revalidating: first.etag)
        #expect(again.json == nil && again.etag == first.etag)
        // What no message reads: an attribute no text or audience uses, an impression a message without a cap counts,
        // time passing.
        harness.writer.source = .server
        try await harness.apply([try harness.writer.update(id: "u1", #"{"shoe_size":44}"#)])
        harness.writer.source = .app(id: "ios", dev: false)
        try await harness.apply([harness.writer.record(.inApp, id: "r1", installationID: "I", fields: inAppReport("impression", "hello", at: t0))])
        harness.clock.set(t0 + 3_600)
        #expect(try await answer(harness, revalidating: first.etag).json == nil)

        var tags = [first.etag]
        /// The answer now: a new tag, and a body for an app holding the previous one (a state seen before gives its
        /// tag again: after the cap is reached, paul sees what he saw before entering the segment).
        func changed(_ what: Comment, config: HeraldConfiguration? = nil) async throws -> JSONValue? {
            let answer = try await answer(harness, config: config, revalidating: tags.last)
            #expect(answer.etag != tags.last, what)
            #expect(answer.json != nil, what)
            tags.append(answer.etag)
            return answer.json
        }
        harness.writer.source = .server
        // A variable a text reads.
        try await harness.apply([try harness.writer.update(id: "u2", #"{"first_name":"Paul"}"#)])
        #expect(try await changed("first name")?["messages"]?[0]?["message"] == .string("Hi Paul"))
        // The audience: a second message shown.
        try await harness.apply([try harness.writer.update(id: "u3", #"{"plan":"gold"}"#)])
        #expect(try await changed("segment entry")?["messages"]?[1]?["id"] == .string("vip"))
        // An impression that uses up a cap: the message gone.
        harness.writer.source = .app(id: "ios", dev: false)
        try await harness.apply([harness.writer.record(.inApp, id: "r2", installationID: "J", fields: inAppReport("impression", "vip", at: t0 + 3_600))])
        #expect(count(try await changed("cap reached")) == 1)
        #expect(tags[3] == tags[1], "the same state as after the first name: the same tag")
        // The language: another variant.
        harness.writer.source = .server
        try await harness.apply([try harness.writer.update(id: "u4", #"{"$language":"fr"}"#)])
        #expect(try await changed("language")?["messages"]?[0]?["message"] == .string("Salut Paul"))
        // The time zone (a `date` would write in it).
        try await harness.apply([try harness.writer.update(id: "u5", #"{"$timezone":"Europe/Paris"}"#)])
        _ = try await changed("time zone")
        // An edit of the message's definition, and a message added.
        let edited = try Self.config(greeting: "Hello {{ c.first_name }}")
        _ = try await changed("a text edited", config: edited)
        let added = try Self.config(extra: [
            #"{"kind":"in_app_message","id":"new","project":"demo","type":"slideup","reeligibility":"always","triggers":[{"session_start":true}],"variants":{"default":{"message":"New"}}}"#
        ])
        #expect(count(try await changed("a message added", config: added)) == 2)
        // The cap's window passed: the message back.
        harness.clock.set(t0 + 3_600 + 86_401)
        #expect(count(try await changed("re-eligible")) == 2)
    }

    /// How many messages an answer shows.
    func count(_ answer: JSONValue?) -> Int? {
        guard case .array(let messages)? = answer?["messages"] else { return nil }
        return messages.count
    }

    @Test("a text that may read the clock: the tag changes with the time")
    func clock() async throws {
        let config = try Self.config(greeting: #"Today is {{ "now" | date: "%A" }}"#)
        #expect(config.inAppMessages["demo/hello"]?.readsClock == true && config.inAppMessages["demo/vip"]?.readsClock == false)
        let harness = try await EngagementHarness(config)
        harness.writer.source = .app(id: "ios", dev: false)
        try await harness.apply([harness.writer.record(.identify, id: "i1", installationID: "I")])
        let first = try await answer(harness)
        #expect(first.json?["messages"]?[0]?["message"] == .string("Today is Wednesday"))
        harness.clock.set(t0 + 86_400)
        let next = try await answer(harness, revalidating: first.etag)
        #expect(next.etag != first.etag && next.json?["messages"]?[0]?["message"] == .string("Today is Thursday"))
    }

    @Test("whenever two answers have the same tag, they show the same messages")
    func soundness() async throws {
        // Many states of one profile (attributes read and not, segments, impressions, time, languages): every pair with
        // one tag must render the same messages, whatever the tag is computed from.
        let harness = try await EngagementHarness(try Self.config())
        harness.writer.source = .app(id: "ios", dev: false)
        try await harness.apply([harness.writer.record(.identify, id: "i1", installationID: "I")])
        var seen: [String: JSONValue] = [:]
        var generator = SeededGenerator(seed: 7)
        let edits = [
            #"{"first_name":"Paul"}"#, #"{"first_name":"Pól"}"#, #"{"first_name":null}"#, #"{"plan":"gold"}"#, #"{"plan":"free"}"#,
            #"{"shoe_size":40}"#, #"{"$language":"fr"}"#, #"{"$language":"en"}"#, #"{"$timezone":"Asia/Tokyo"}"#,
        ]
        for step in 0..<60 {
            let at = t0 + Double(step) * 7_200
            harness.clock.set(at)
            switch generator.next() % 3 {
            case 0:
                harness.writer.source = .server
                try await harness.apply([try harness.writer.update(id: "e\(step)", edits[Int(generator.next() % UInt64(edits.count))], at: at)])
            case 1:
                harness.writer.source = .app(id: "ios", dev: false)
                let message = generator.next() % 2 == 0 ? "vip" : "hello"
                try await harness.apply([harness.writer.record(.inApp, id: "r\(step)", installationID: "I", fields: inAppReport("impression", message, at: at))])
            default: break
            }
            let answer = try await answer(harness)
            let messages = try #require(answer.json?["messages"])
            if let earlier = seen[answer.etag] { #expect(earlier == messages, "step \(step)") }
            seen[answer.etag] = messages
        }
        #expect(seen.count > 5)
    }

    @Test("If-None-Match names a tag: exact, weak, in a list, or *", arguments: [
        (nil, false), (#""abc""#, true), (#"W/"abc""#, true), (#""x", "abc""#, true), (#""x",W/"abc""#, true), ("*", true),
        (#""abd""#, false), ("abc", false), ("", false), (#""x", "y""#, false),
    ] as [(String?, Bool)])
    func entityTags(header: String?, names: Bool) {
        #expect(EntityTags.names(#""abc""#, in: header) == names)
    }
}
