import Foundation
import Shared
import Testing

@Suite("Segment language: parsing")
struct SegmentParserTests {
    @Test("valid conditions parse to the expected tree", arguments: [
        (#"c.plan = "gold""#, SegmentExpression.compare(SegmentPath("c", ["plan"]), .equal, .string("gold"))),
        ("c.age >= 18", .compare(SegmentPath("c", ["age"]), .greaterOrEqual, .number(18))),
        ("c.balance < -2.5", .compare(SegmentPath("c", ["balance"]), .less, .number(-2.5))),
        ("e.PURCHASED.last < now - 30d", .compare(SegmentPath("e", ["PURCHASED", "last"]), .less, .relativeTime(seconds: -2_592_000))),
        ("b.last_visit_date > now-7d", .compare(SegmentPath("b", ["last_visit_date"]), .greater, .relativeTime(seconds: -604_800))),
        ("c.trial_end <= now + 12h", .compare(SegmentPath("c", ["trial_end"]), .lessOrEqual, .relativeTime(seconds: 43_200))),
        ("c.seen < now", .compare(SegmentPath("c", ["seen"]), .less, .relativeTime(seconds: 0))),
        (#"b.region in ["FR", "BE"]"#, .isIn(SegmentPath("b", ["region"]), [.string("FR"), .string("BE")])),
        (#"c.interests contains "ski""#, .contains(SegmentPath("c", ["interests"]), .string("ski"))),
        ("t.vip exists", .exists(SegmentPath("t", ["vip"]))),
        ("email.reachable = true", .compare(SegmentPath("email", ["reachable"]), .equal, .bool(true))),
        ("c.nickname = null", .compare(SegmentPath("c", ["nickname"]), .equal, .null)),
        (#"c.a = "x" or c.b = "y" and not c.c = "z""#,
         .or(.compare(SegmentPath("c", ["a"]), .equal, .string("x")),
             .and(.compare(SegmentPath("c", ["b"]), .equal, .string("y")), .not(.compare(SegmentPath("c", ["c"]), .equal, .string("z")))))),
        (#"(c.a = "x" or c.b = "y") and c.c != "z""#,
         .and(.or(.compare(SegmentPath("c", ["a"]), .equal, .string("x")), .compare(SegmentPath("c", ["b"]), .equal, .string("y"))),
              .compare(SegmentPath("c", ["c"]), .notEqual, .string("z")))),
        (#"c.quote = "say \"hi\"""#, .compare(SegmentPath("c", ["quote"]), .equal, .string(#"say "hi""#))),
    ])
    func valid(text: String, expected: SegmentExpression) throws {
        #expect(try SegmentParser.parse(text) == expected)
    }

    @Test("invalid conditions fail at the right position with what was expected", arguments: [
        ("", 1, 1, "expected a condition such as `c.plan = \"gold\"`, found the end"),
        (#"plan = "gold""#, 1, 1, "`plan` is not a path: expected b., c., t., e., email., sms., push. or location. and a name"),
        (#"x.plan = "gold""#, 1, 1, "`x.plan` is not a path: expected b., c., t., e., email., sms., push. or location. and a name"),
        ("c.plan", 1, 7, "expected a comparison (=, !=, <, <=, >, >=), `in`, `contains` or `exists` after c.plan, found the end"),
        ("c.plan = ", 1, 10, "expected a value (a string, a number, true, false, null or now ± a duration), found the end"),
        (#"c.plan = "gold" and"#, 1, 20, "expected a condition such as `c.plan = \"gold\"`, found the end"),
        (#"c.plan = "gold" c.age = 3"#, 1, 17, "expected `and`, `or` or the end, found `c.age`"),
        (#"(c.plan = "gold""#, 1, 17, "expected `)`, found the end"),
        (#"c.plan = "gold"#, 1, 10, "unterminated string"),
        ("e.X.last < now - 30", 1, 18, "expected a duration such as 30d, 12h or 15m after `now -`, found the number 30"),
        ("e.X.last < now - 30y", 1, 20, "a duration's unit is s, m, h, d or w"),
        (#"b.region in "FR""#, 1, 13, "expected `[` after `in`, found the string \"FR\""),
        (#"b.region in ["FR" "BE"]"#, 1, 19, "expected `,` or `]`, found the string \"BE\""),
        ("c.age # 3", 1, 7, "unexpected character `#`"),
        ("c.age < -x", 1, 10, "expected a number after `-`, found `x`"),
        ("c.a = 1 and\n  c.b ~ 2", 2, 7, "unexpected character `~`"),
    ])
    func invalid(text: String, line: Int, column: Int, message: String) {
        expectParseError(text, line: line, column: column, message: message)
    }

    @Test("the paths a condition reads (for incremental evaluation)")
    func paths() throws {
        let expression = try SegmentParser.parse(#"c.plan = "gold" and (e.BUY.count > 2 or not t.vip exists)"#)
        #expect(expression.paths == [SegmentPath("c", ["plan"]), SegmentPath("e", ["BUY", "count"]), SegmentPath("t", ["vip"])])
    }
}

@Suite("Segment language: evaluation")
struct SegmentEvaluationTests {
    static let now = Date(timeIntervalSince1970: 1_800_000_000)
    static let profile: [String: SegmentValue] = [
        "c.plan": .string("gold"), "c.age": .number(30), "c.pro": .bool(true),
        "c.interests": .strings(["ski", "jazz"]), "b.region": .string("FR"),
        "e.PURCHASED.last": .time(now.addingTimeInterval(-40 * 86_400)),
        "b.last_visit_date": .time(now.addingTimeInterval(-2 * 86_400)),
    ]

    static func read(_ path: SegmentPath) -> SegmentValue? { profile[path.description] }

    @Test("each operator and namespace", arguments: [
        (#"c.plan = "gold""#, true), (#"c.plan != "gold""#, false), (#"c.plan < "silver""#, true),
        ("c.age > 29", true), ("c.age >= 30", true), ("c.age < 30", false), ("c.age <= 30", true), ("c.age = 30", true),
        ("c.pro = true", true), ("c.pro != true", false), ("c.pro > false", false),
        (#"c.age = "30""#, false),  // types never mix
        (#"b.region in ["BE", "FR"]"#, true), (#"b.region in ["BE"]"#, false),
        (#"c.interests contains "ski""#, true), (#"c.interests contains "golf""#, false),
        (#"c.interests in ["golf", "jazz"]"#, true), (#"c.plan contains "ol""#, true),
        ("c.plan exists", true), ("c.missing exists", false), ("not c.missing exists", true),
        ("c.missing = null", true), ("c.plan = null", false), ("c.plan != null", true),
        (#"c.missing != "x""#, false), (#"not c.missing = "x""#, true),
        ("e.PURCHASED.last < now - 30d", true), ("e.PURCHASED.last < now - 45d", false),
        ("b.last_visit_date > now - 7d", true), (#"e.PURCHASED.last > "2026-01-01T00:00:00Z""#, true),
        (#"c.plan = "gold" and c.age > 40"#, false), (#"c.plan = "gold" or c.age > 40"#, true),
    ])
    func evaluate(text: String, expected: Bool) throws {
        #expect(try SegmentParser.parse(text).matches(at: Self.now, read: Self.read) == expected)
    }

    @Test("time conditions: the next change is when the relative time crosses the value, and the answer flips there")
    func nextChange() throws {
        // Last purchase 40 days ago: `> now - 45d` is true now and becomes false just after 45 days.
        let expression = try SegmentParser.parse("e.PURCHASED.last > now - 45d")
        let flip = try #require(expression.nextChange(after: Self.now, read: Self.read))
        #expect(flip == Self.now.addingTimeInterval(5 * 86_400))
        // Every operator: true or false just before the flip, the other way at it.
        for op in SegmentOperator.allCases where op != .equal && op != .notEqual {
            let condition = try SegmentParser.parse("e.PURCHASED.last \(op.rawValue) now - 45d")
            let at = try #require(condition.nextChange(after: Self.now, read: Self.read), "\(op)")
            #expect(
                condition.matches(at: at.addingTimeInterval(-0.001), read: Self.read) != condition.matches(at: at, read: Self.read),
                "\(op)")
            #expect(
                condition.matches(at: Self.now, read: Self.read) == condition.matches(at: at.addingTimeInterval(-0.001), read: Self.read),
                "\(op)")
        }
        // Already past the boundary, and no clock in the condition: no timer.
        #expect(try SegmentParser.parse("e.PURCHASED.last < now - 30d").nextChange(after: Self.now, read: Self.read) == nil)
        #expect(try SegmentParser.parse(#"c.plan = "gold""#).nextChange(after: Self.now, read: Self.read) == nil)
        // The earliest of several.
        let both = try SegmentParser.parse("e.PURCHASED.last > now - 45d or b.last_visit_date > now - 3d")
        #expect(both.nextChange(after: Self.now, read: Self.read) == Self.now.addingTimeInterval(86_400))
    }
}
