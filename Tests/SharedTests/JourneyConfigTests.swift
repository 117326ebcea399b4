import Foundation
import Shared
import Testing

/// `kind: journey` as `herald config validate` reads it (docs/journeys.md): the published limits and every mistake
/// named by its field.
@Suite("Journey configuration")
struct JourneyConfigTests {
    static let base = [
        #"{"kind":"project","id":"demo"}"#,
        #"{"kind":"template","id":"hi","project":"demo","channel":"push","variants":{"default":{"body":"Hi"}}}"#,
        #"{"kind":"template","id":"mail","project":"demo","channel":"email","variants":{"default":{"subject":"S","text":"T"}}}"#,
        #"{"kind":"segment","id":"vip","project":"demo","condition":"c.vip = true"}"#,
    ]

    /// A journey whose nodes are `nodes` (JSON members), starting at `start`, with `extra` members.
    static func journey(_ nodes: String, start: String = "a", extra: String = "") -> String {
        #"{"kind":"journey","id":"j","project":"demo","entry":{"event":"signed_up"},"start":"\#(start)","nodes":{\#(nodes)}\#(extra)}"#
    }

    static let message = #""a":{"message":{"channel":"push","template":"hi"},"next":"z"},"z":{"exit":{}}"#

    @Test("a journey with every kind of node is read whole")
    func valid() throws {
        let text = Self.journey(
            #"""
            "a":{"message":{"channel":"email","template":"mail"},"next":"w"},
            "w":{"wait":{"branches":[{"event":"purchased","where":"event.cart_id = entry.cart_id","next":"z"},{"segment":"vip","next":"s"}],
                         "timeout":{"after":"2d","next":"d"}}},
            "d":{"delay":{"until":"09:00","on":["monday","friday"]},"next":"s"},
            "s":{"split":{"branches":[{"condition":"c.vip = true and entry.plan = \"gold\"","next":"x"}],"else":"e"}},
            "x":{"experiment":{"arms":[{"name":"a","percent":40,"next":"z"},{"name":"b","percent":60,"next":"m"}]}},
            "e":{"delay":"1h","next":"z"},
            "m":{"message":{"channel":"push","template":"hi"},"next":"u"},
            "u":{"update":{"attributes":{"plan":"gold","$language":"fr","interests":{"$add":["x"]}}},"next":"z"},
            "z":{"exit":true}
            """#,
            extra: #","audience":"vip","reentry":{"max_concurrent":3},"exit":[{"event":"unsubscribed","where":"event.list = entry.list"},{"segment_entry":"vip"}]"#)
        let (config, issues) = try readConfiguration(Self.base + [text])
        #expect(issues == [])
        let journey = try #require(config.journeys["demo/j"])
        #expect(journey.nodes.count == 9 && journey.start == "a" && journey.reentry == .maxConcurrent(3))
        #expect(journey.entry == .event(name: "SIGNED_UP", condition: nil))
        #expect(journey.version.count == 12)
        #expect(journey.nodes["d"]?.step == .delay(.until(LocalTime("09:00")!, weekdays: [1, 5]), next: "s"))
        // The version is the text: the same text is the same version, another text another.
        let (again, _) = try readConfiguration(Self.base + [text])
        #expect(again.journeys["demo/j"]?.version == journey.version)
        let (edited, _) = try readConfiguration(Self.base + [text.replacingOccurrences(of: "\"1h\"", with: "\"2h\"")])
        #expect(edited.journeys["demo/j"]?.version != journey.version)
        // A kept version reads back as the same journey.
        #expect(JourneyDefinition.stored(journey.source)?.version == journey.version)
        #expect(JourneyDefinition.stored(journey.source)?.nodes.mapValues(\.step) == journey.nodes.mapValues(\.step))
    }

    @Test("entries by the API and by a schedule (an instant, a period, a local time of day) are read, with their audience")
    func entries() throws {
        for (entry, expected) in [
            (#"{"api":true}"#, "api"), (#"{"schedule":{"at":"2026-12-01T09:00:00Z","every":"7d"}}"#, "schedule"),
            (#"{"schedule":{"at":"09:00","timezone":"local","on":"2026-12-01","every":"1d"}}"#, "schedule"),
        ] {
            let text = #"{"kind":"journey","id":"j","project":"demo","entry":\#(entry),"audience":"vip","start":"a","nodes":{\#(Self.message)}}"#
            let (config, issues) = try readConfiguration(Self.base + [text])
            #expect(issues == [], "\(entry)")
            let journey = try #require(config.journeys["demo/j"])
            #expect((journey.entry == .api ? "api" : journey.entry.isScheduled ? "schedule" : "other") == expected)
            // A scheduled entry runs as the campaigns' schedules run, under a key no campaign or node has.
            #expect(journey.scheduledEntry?.key == (expected == "schedule" ? "demo/j/@entry" : nil))
            #expect(journey.scheduledEntry?.enters == (expected == "schedule" ? "demo/j" : nil))
        }
    }

    @Test("each mistake is refused, named by its field")
    func refused() throws {
        let exit = #""z":{"exit":{}}"#
        let cases: [(String, String)] = [
            // The graph.
            (Self.journey(#""a":{"delay":"1h","next":"b"},"b":{"delay":"1h","next":"a"}"#),
             "nodes.a: a cycle (a → b → a); a journey only goes forward"),
            (Self.journey(Self.message + #","lost":{"exit":{}}"#), "nodes.lost: not reachable from start (a)"),
            (Self.journey(#""a":{"delay":"1h","next":"nowhere"},"# + exit), "nodes.a: next: no node nowhere"),
            (Self.journey(Self.message, start: "b"), "start: no node b"),
            (Self.journey((0..<101).map { #""n\#($0)":{"delay":"1h","next":"n\#($0 + 1)"}"# }.joined(separator: ",") + #","n101":{"exit":{}}"#, start: "n0"),
             "nodes: 102, at most 100"),
            // Waits and delays.
            (Self.journey(#""a":{"wait":{"branches":[{"event":"purchased","next":"z"}]}},"# + exit),
             "nodes.a.wait: missing `timeout` ({after: 2d, next: …}): a wait without one could hold a profile forever"),
            (Self.journey(#""a":{"delay":"30s","next":"z"},"# + exit), #"nodes.a.delay: expected a duration from 60s to 366d such as 2d, found "30s""#),
            (Self.journey(#""a":{"wait":{"branches":[{"event":"purchased","next":"z"}],"timeout":{"after":"400d","next":"z"}}},"# + exit),
             #"nodes.a.wait.timeout.after: expected a duration from 60s to 366d such as 2d, found "400d""#),
            (Self.journey(#""a":{"delay":{"until":"9:00"},"next":"z"},"# + exit), #"nodes.a.delay.until: expected a time of day HH:MM, found "9:00""#),
            (Self.journey(#""a":{"delay":{"until":"09:00","on":["mon"]},"next":"z"},"# + exit),
             "nodes.a.delay.on: expected sunday, monday, tuesday, wednesday, thursday, friday, saturday, found mon"),
            (Self.journey(#""a":{"wait":{"branches":[{"event":"purchased","where":"event.cart_id = basket.id","next":"z"}],"timeout":{"after":"1d","next":"z"}}},"# + exit),
             "condition, line 1 column 17: expected a value (a string, a number, true, false, null or now ± a duration), found `basket.id`"),
            // Nodes.
            (Self.journey(#""a":{"delay":"1h","exit":{},"next":"z"},"# + exit), "nodes.a: expected exactly one of delay, wait, split, experiment, message, update, card, exit, found delay and exit"),
            (Self.journey(#""a":{"message":{"channel":"push","template":"hi"}},"# + exit), "nodes.a: missing `next` (the node it leads to)"),
            (Self.journey(#""a":{"message":{"channel":"push","template":"mail"},"next":"z"},"# + exit), "journey j: nodes.a.message: template mail is for email, not push"),
            (Self.journey(#""a":{"message":{"channel":"push","template":"nope"},"next":"z"},"# + exit), "journey j: nodes.a.message.template: no template nope in project demo"),
            (Self.journey(#""a":{"split":{"branches":[\#((0..<9).map { _ in #"{"condition":"c.x = 1","next":"z"}"# }.joined(separator: ","))],"else":"z"}},"# + exit),
             "nodes.a.split.branches: expected a list of 1 to 8 branches"),
            (Self.journey(#""a":{"experiment":{"arms":[{"name":"a","percent":40,"next":"z"},{"name":"b","percent":40,"next":"z"}]}},"# + exit),
             "nodes.a.experiment.arms: the percents add up to 80, not 100"),
            (Self.journey(#""a":{"wait":{"branches":[{"segment":"gold","next":"z"}],"timeout":{"after":"1d","next":"z"}}},"# + exit),
             "journey j: nodes.a.wait.branches[0].segment: no segment gold in project demo"),
            (Self.journey(#""a":{"update":{"attributes":{"plan":"gold","bad name":1}},"next":"z"},"# + exit),
             "nodes.a.update.attributes.bad name: attribute names are 1 to 30 letters, digits or underscores"),
            (Self.journey(#""a":{"update":{"attributes":{"$email_address":"a@example.com"}},"next":"z"},"# + exit),
             "nodes.a.update.attributes.$email_address: an update node does not set an address (the same literal for every profile)"),
            (Self.journey(#""a":{"update":{"set":{"plan":"gold"}},"next":"z"},"# + exit), "nodes.a.update.attributes: expected a mapping of attribute names to values"),
            (Self.journey(#""a":{"card":"nope","next":"z"},"# + exit), "journey j: nodes.a.card: no content_card nope in project demo"),
            // Entry, re-entry, exits.
            (Self.journey(Self.message, extra: #","reentry":{"max_concurrent":26}"#), "reentry: expected never, {after: 30d} or {max_concurrent: 1 to 25}"),
            (#"{"kind":"journey","id":"j","project":"demo","entry":{"session_start":true},"start":"a","nodes":{\#(Self.message)}}"#,
             "entry: expected event, segment_entry, segment_exit, api or schedule (a journey does not start on what an app reports)"),
            (#"{"kind":"journey","id":"j","project":"demo","entry":{"schedule":{"at":"09:00","timezone":"local","on":"2026-12-01"}},"start":"a","nodes":{\#(Self.message)}}"#,
             "a journey entered on a schedule needs an `audience` segment: the profiles each run enters"),
            (Self.journey(Self.message, extra: #","exit":[{"tag":"x"}]"#), "exit[0]: expected event, segment_entry or segment_exit, found `tag`"),
            (Self.journey(Self.message, extra: #","exit":[{"segment_exit":"gold"}]"#), "journey j: exit[0].segment_exit: no segment gold in project demo"),
            (Self.journey(Self.message, extra: #","audience":"gold""#), "journey j: audience: no segment gold in project demo"),
            (Self.journey(Self.message, extra: #","type":"transactional","quiet_hours":"off""#),
             "quiet_hours: transactional journeys are never held; remove it or make the journey marketing"),
        ]
        for (text, expected) in cases {
            let (config, issues) = try readConfiguration(Self.base + [text])
            #expect(issues.contains(expected), "\(expected)\n  got \(issues)")
            #expect(config.journeys.isEmpty || issues.allSatisfy { $0.hasPrefix("journey j:") }, "\(issues)")
        }
    }
}
