import Foundation
import Shared
import Testing

private func json(_ text: String) throws -> JSONValue { try JSONParser.parse(Array(text.utf8)) }
private func s(_ count: Int, _ character: Character = "a") -> String { String(repeating: character, count: count) }

@Suite("JSON parsing")
struct JSONParsingTests {
    @Test("numbers keep their literal; order and repeated keys are kept")
    func literals() throws {
        let value = try json(#"{"b":1,"a":1.0,"b":18446744073709551616,"c":-0.5e-3,"d":[true,null,"x\u00e9\ud83d\ude00"]}"#)
        guard case .object(let members) = value else { Issue.record("not an object"); return }
        #expect(members.map(\.key) == ["b", "a", "b", "c", "d"])
        #expect(members[0].value == .number("1"))
        #expect(members[1].value == .number("1.0"))
        #expect(members[2].value == .number("18446744073709551616"))
        #expect(members[3].value == .number("-0.5e-3"))
        #expect(members[4].value == .array([.bool(true), .null, .string("xé😀")]))
    }

    @Test(
        "malformed documents are refused with the line and column",
        arguments: [
            ("", 1, 1, "unexpected end of input"),
            ("{\"a\":1,}", 1, 8, "expected a string key"),
            ("{\n  \"a\" 1}", 2, 7, "expected ':'"),
            ("[1 2]", 1, 4, "expected ',' or ']'"),
            ("01", 1, 1, "leading zero"),
            ("1.", 1, 3, "digit expected after '.'"),
            ("\"abc", 1, 1, "unterminated string"),
            ("\"a\nb\"", 1, 3, "control character"),
            ("\"\\x\"", 1, 2, "invalid escape"),
            ("\"\\ud800\"", 1, 8, "unpaired surrogate"),
            ("tru", 1, 1, "expected true"),
            ("{} x", 1, 4, "unexpected content"),
            ("{\"é\":x}", 1, 6, "unexpected character 'x'"),
        ])
    func malformed(text: String, line: Int, column: Int, message: String) {
        let error = #expect(throws: JSONParseError.self) { try JSONParser.parse(Array(text.utf8)) }
        #expect(error?.line == line)
        #expect(error?.column == column)
        #expect(error?.message.contains(message) == true, "\(error?.message ?? "")")
    }

    @Test("invalid UTF-8 and excessive nesting are refused")
    func bytesAndDepth() {
        #expect(throws: JSONParseError.self) { try JSONParser.parse([0x22, 0xFF, 0x22]) }
        #expect(throws: JSONParseError.self) { try JSONParser.parse(Array((s(65, "[") + s(65, "]")).utf8)) }
        #expect(throws: Never.self) { try JSONParser.parse(Array((s(64, "[") + s(64, "]")).utf8)) }
    }

    @Test("serialising gives back the same document")
    func roundTrip() throws {
        let text = #"{"a":[1,2.5,"x\"\n"],"b":{"c":null,"d":false}}"#
        #expect(String(decoding: try json(text).serialized, as: UTF8.self) == text)
    }
}

@Suite("Value rules (shared/spec/batch-rules.md §12)")
struct RuleTests {
    @Test(
        "rule 7: names ^[a-zA-Z0-9_]{1,30}$, stored lowercased; '$' refused",
        arguments: [
            ("has_premium", "has_premium"), ("Has_Premium", "has_premium"), (s(30), s(30)), ("a", "a"), ("_9", "_9"),
        ])
    func validNames(name: String, stored: String) throws {
        #expect(try Rules.attributeName(name) == stored)
    }

    @Test("rule 7: invalid names", arguments: ["", s(31), "fir$t_name", "with-dash", "with space", "é", "a.b"])
    func invalidNames(name: String) {
        #expect(throws: Violation.self) { try Rules.attributeName(name) }
    }

    @Test("rule 13: event names uppercased; same character rule")
    func eventNames() throws {
        #expect(try Rules.eventName("purchased") == "PURCHASED")
        #expect(try Rules.eventName(s(30)) == s(30).uppercased())
        for bad in ["", s(31), "add-to-cart", "$purchase"] {
            #expect(throws: Violation.self, "\(bad)") { try Rules.eventName(bad) }
        }
    }

    @Test(
        "rule 1: custom IDs",
        arguments: [
            ("paul", true), (s(1024), true), (s(1025), false), ("", false), ("  ", false), ("a\nb", false),
            ("NULL", false), ("Undefined", false), ("nil", false), ("(null)", false), ("[object Object]", false),
            ("true", false), ("FALSE", false), ("NaN", false), ("Infinity", false), ("-infinity", false),
            (" paul ", true), ("nullable", true),
            // Herald's own key spaces under a project: refused, so that no custom ID names a home or a token's key.
            ("install/8B2C0F4E", false), ("token/ab12", false), ("installer/paul", true), ("paul/install/x", true),
        ])
    func customIDs(id: String, valid: Bool) {
        #expect(((try? Rules.customID(id)) != nil) == valid)
    }

    @Test(
        "rule 4: email ≤256 with a valid shape",
        arguments: [
            ("paul@example.com", true), ("p.a+ul@mail.example.co", true), (s(244) + "@example.com", true),
            (s(245) + "@example.com", false), ("paul", false), ("@example.com", false), ("paul@", false),
            ("paul@example", false), ("pa ul@example.com", false), ("paul@@example.com", false), ("paul@exa mple.com", false),
            ("paul@example.", false),
        ])
    func emails(email: String, valid: Bool) {
        #expect(((try? Rules.email(email)) != nil) == valid, "\(email)")
    }

    @Test(
        "rule 3: phone ^\\+[0-9]{1,15}$",
        arguments: [
            ("+33612345678", true), ("+1", true), ("+" + s(15, "9"), true), ("+" + s(16, "9"), false), ("+", false),
            ("33612345678", false), ("+33 6 12", false), ("+33-612", false),
        ])
    func phones(phone: String, valid: Bool) {
        #expect(((try? Rules.phone(phone)) != nil) == valid)
    }

    @Test("rule 5: marketing states")
    func marketing() {
        #expect((try? Rules.marketingState("subscribed")) == "subscribed")
        #expect((try? Rules.marketingState("unsubscribed")) == "unsubscribed")
        for bad in ["Subscribed", "yes", "", "opted_in"] { #expect((try? Rules.marketingState(bad)) == nil) }
    }

    @Test("rule 6: language ISO 639-1 lowercased, region ISO 3166-1 uppercased, IANA time zones")
    func locale() throws {
        #expect(try Rules.language("FR") == "fr")
        #expect(try Rules.region("fr") == "FR")
        #expect(try Rules.timeZone("Europe/Paris") == "Europe/Paris")
        #expect(try Rules.timeZone("UTC") == "UTC")
        // Links are names too (old Android devices report Asia/Calcutta).
        #expect(try Rules.timeZone("Asia/Calcutta") == "Asia/Calcutta")
        #expect(try Rules.timeZone("US/Eastern") == "US/Eastern")
        // Only ASCII letters change case: the Kelvin sign lowercases to "k", the long s uppercases to "S".
        for bad in ["f", "fra", "xx", "en-US", "", "\u{212A}a", "ıt"] { #expect((try? Rules.language(bad)) == nil, "\(bad)") }
        for bad in ["F", "FRA", "XX", "UK", "", "\u{17F}E", "ſe"] { #expect((try? Rules.region(bad)) == nil, "\(bad)") }
        for bad in ["Europe/Pariss", "GMT+1", "CEST", "", "localtime", "Factory", "europe/paris"] {
            #expect((try? Rules.timeZone(bad)) == nil, "\(bad)")
        }
    }

    @Test(
        "rules 8, 15: strings ≤300; event strings single-line and not blank",
        arguments: [(s(300), true, true), (s(301), false, false), ("", false, false), ("  ", true, false), ("a\nb", true, false)])
    func strings(text: String, profile: Bool, event: Bool) {
        #expect(((try? Rules.profileString(text)) != nil) == profile)
        #expect(((try? Rules.eventString(text)) != nil) == event)
    }

    @Test("lengths count code points, as the API's schema does (maxLength); the SDKs' UTF-16 count is never smaller")
    func codePoints() {
        #expect((try? Rules.profileString(s(300, "😀"))) != nil)
        #expect((try? Rules.profileString(s(301, "😀"))) == nil)
        // One character of two code points counts two.
        #expect((try? Rules.profileString(s(150, "e\u{301}"))) != nil)
        #expect((try? Rules.profileString(s(151, "e\u{301}"))) == nil)
    }

    @Test(
        "rule 9: numbers fit int64 or double; unsigned overflow refused",
        arguments: [
            ("9223372036854775807", "i"), ("-9223372036854775808", "i"), ("9223372036854775808", nil),
            ("18446744073709551615", nil), ("-9223372036854775809", nil), ("1.0", "f"), ("1e3", "f"), ("1e400", nil),
            ("-1.5", "f"), ("0", "i"),
            // A whole value must fit an int64 however it is written (the API's schema cannot tell spellings apart).
            ("1e19", nil), ("9.3e18", nil), ("-9.223372036854775808e18", "f"), ("9.2e18", "f"), ("1.5e300", nil),
            ("1.5e-300", "f"),
        ] as [(String, String?)])
    func numbers(literal: String, suffix: String?) {
        #expect((try? Rules.number(literal))?.suffix == suffix)
    }

    @Test(
        "rule 10: URLs ≤2048 with a scheme and a host",
        arguments: [
            ("https://example.com", true), ("myapp://open/page", true), ("https://e.com/" + s(2034), true),
            ("https://e.com/" + s(2035), false), ("example.com", false), ("https://", false), ("/path", false),
            ("a+b.c-d://h", true), ("https://e.com/é😀", true), ("https://exa mple.com", false), ("1http://x", false),
            ("http://?x", false), ("mailto:x@y.z", false), ("https://e.com/\u{85}", false), ("https://e.com/\u{3000}", false),
            ("htt p://x", false),
        ])
    func urls(url: String, valid: Bool) {
        #expect(((try? Rules.url(url)) != nil) == valid)
    }

    @Test("dates: ISO-8601 with a zone, stored in UTC")
    func dates() throws {
        #expect(WireTime.format(try Rules.date("2026-11-22T10:00:00Z")) == "2026-11-22T10:00:00.000Z")
        #expect(WireTime.format(try Rules.date("2026-11-22T11:00:00+01:00")) == "2026-11-22T10:00:00.000Z")
        #expect(WireTime.format(try Rules.date("2026-11-22T10:00:00.250Z")) == "2026-11-22T10:00:00.250Z")
        #expect(WireTime.format(try Rules.date("2016-12-14T13:32:31.601-0800")) == "2016-12-14T21:32:31.601Z")
        for bad in ["2026-11-22", "22/11/2026", "2026-11-22T10:00:00", "tomorrow"] {
            #expect((try? Rules.date(bad)) == nil, "\(bad)")
        }
    }
}

@Suite("Profile edits: validated per operation (rule 12)")
struct ProfileEditTests {
    @Test("valid operations are kept, invalid ones dropped and reported by path")
    func perOperation() throws {
        let (edit, problems) = ProfileValidation.validate(
            try json(
                #"""
                {"$email_address":"paul@example.com","$email_marketing":"subscribed","Age":26,"score":1.5,"vip":true,
                 "bad$name":1,"nickname":"","plan":"gold","since":{"$date":"2026-01-01T00:00:00Z"},
                 "site":{"$url":"https://example.com"},"interests":["a","b"],"visits":{"$add":["x"],"$remove":["y"]},
                 "gone":null,"$language":"FR","$region":"xx","$shoe_size":42,"AGE":27}
                """#), path: "attributes", identified: true)
        #expect(
            String(decoding: edit.json.serialized, as: UTF8.self)
                == #"{"email":"paul@example.com","email_marketing":"subscribed","language":"fr","custom_attributes":{"score.f":1.5,"vip.b":true,"plan.s":"gold","since.t":"2026-01-01T00:00:00.000Z","site.u":"https://example.com","interests.a":["a","b"],"visits.a":{"$add":["x"],"$remove":["y"]},"gone":null,"age.i":27}}"#
        )
        #expect(
            problems.map { "\($0.path) \($0.code)" } == [
                "attributes.bad$name reserved_name", "attributes.nickname empty_string", "attributes.$region invalid_region",
                "attributes.$shoe_size unknown_native_attribute",
            ])
    }

    @Test("rule 2: email and phone need an identified profile; erasing too")
    func identification() throws {
        let (edit, problems) = ProfileValidation.validate(
            try json(#"{"$email_address":"a@b.co","$phone_number":null,"$sms_marketing":"subscribed"}"#),
            path: "a", identified: false)
        #expect(problems.map(\.code) == ["not_identified", "not_identified"])
        #expect(edit.natives == [JSONMember("sms_marketing", .string("subscribed"))])
    }

    @Test("rule 11: arrays and $add/$remove hold at most 25 valid strings")
    func arrays() throws {
        func items(_ count: Int) -> String { "[" + (0..<count).map { "\"i\($0)\"" }.joined(separator: ",") + "]" }
        let (edit, problems) = ProfileValidation.validate(
            try json(
                """
                {"ok":\(items(25)),"too_many":\(items(26)),"add_ok":{"$add":\(items(25))},"add_many":{"$add":\(items(26))},
                 "remove_many":{"$remove":\(items(26))},"mixed":["a",1],"empty_item":["a",""],"bad_op":{"$push":["a"]},
                 "empty":[]}
                """), path: "a", identified: true)
        #expect(edit.attributes.map(\.name) == ["ok", "add_ok", "empty"])
        #expect(
            problems.map { "\($0.path) \($0.code)" } == [
                "a.too_many too_many_items", "a.add_many too_many_items", "a.remove_many too_many_items",
                "a.mixed invalid_item", "a.empty_item empty_string", "a.bad_op unsupported_value",
            ])
    }

    @Test("natives: types and null")
    func natives() throws {
        let (edit, problems) = ProfileValidation.validate(
            try json(
                #"{"$language":null,"$timezone":"Europe/Paris","$email_marketing":null,"$region":7,"$phone_number":"+33612345678"}"#),
            path: "a", identified: true)
        #expect(
            edit.natives == [
                JSONMember("language", .null), JSONMember("timezone", .string("Europe/Paris")),
                JSONMember("phone_number", .string("+33612345678")),
            ])
        #expect(problems.map(\.code) == ["invalid_subscription_state", "invalid_type"])
    }
}

@Suite("Events: all-or-nothing (rules 13–17)")
struct EventTests {
    private func validate(_ text: String) throws -> EventOutcome {
        EventValidation.validate(try json(text), path: "events[0]")
    }

    @Test("the documented example is accepted and normalised")
    func example() throws {
        let outcome = try validate(
            #"""
            {"name":"purchased","id":"evt-1","time":"2026-11-22T10:00:00Z","attributes":{
              "sub_category":"bags","end_of_sale_date":{"$date":"2026-12-01T00:00:00Z"},
              "items_list":[{"name":"Basil","price":23.99,"item_url":{"$url":"https://example.com/basil"},"in_sales":true}],
              "$label":"legacy_label","$tags":["Spring","spring","sale"]}}
            """#)
        guard case .valid(let event) = outcome else { Issue.record("\(outcome)"); return }
        #expect(
            String(decoding: event.json.serialized, as: UTF8.self)
                == #"{"name":"PURCHASED","id":"evt-1","time":"2026-11-22T10:00:00.000Z","label":"legacy_label","tags":["spring","sale"],"attributes":{"sub_category.s":"bags","end_of_sale_date.t":"2026-12-01T00:00:00.000Z","items_list.a":[{"name.s":"Basil","price.f":23.99,"item_url.u":"https://example.com/basil","in_sales.b":true}]}}"#
        )
    }

    @Test("an event without attributes is valid")
    func bare() throws {
        #expect(try validate(#"{"name":"app_open"}"#) == .valid(ValidatedEvent(name: "APP_OPEN", attributes: [])))
    }

    @Test("one bad attribute drops the event, and every problem is listed")
    func allOrNothing() throws {
        let outcome = try validate(
            #"{"name":"x","colour":"","size":"big","note":"a\nb","$other":1,"attributes":{"a":"","b":{"c":[1,"x"]}}}"#)
        guard case .invalid(let problems) = outcome else { Issue.record("accepted"); return }
        #expect(
            problems.map { "\($0.path) \($0.code)" } == [
                "events[0].colour unknown_field", "events[0].size unknown_field", "events[0].note unknown_field",
                "events[0].$other unknown_field", "events[0].attributes.a empty_string",
                "events[0].attributes.b.c mixed_array",
            ])
    }

    static func object(depth: Int) -> String {
        depth == 0 ? "1" : #"{"o":\#(object(depth: depth - 1))}"#
    }

    static func attributes(_ count: Int) -> String {
        "{" + (0..<count).map { "\"a\($0)\":1" }.joined(separator: ",") + "}"
    }

    @Test(
        "rule 16: arrays ≤25, one kind, not nested; objects ≤3 levels and ≤20 attributes",
        arguments: [
            (#"{"l":[\#((0..<25).map { _ in "\"x\"" }.joined(separator: ","))]}"#, nil),
            (#"{"l":[\#((0..<26).map { _ in "\"x\"" }.joined(separator: ","))]}"#, "too_many_items"),
            (#"{"l":[["x"]]}"#, "nested_array"),
            (#"{"l":["x",{"a":1}]}"#, "mixed_array"),
            (#"{"l":[1,2]}"#, "mixed_array"),
            (#"{"o":\#(object(depth: 3))}"#, nil),
            (#"{"o":\#(object(depth: 4))}"#, "too_deep"),
            (attributes(20), nil),
            (attributes(21), "too_many_attributes"),
            (#"{"o":\#(attributes(21))}"#, "too_many_attributes"),
            (#"{"n":null}"#, "invalid_type"),
            (#"{"big":18446744073709551615}"#, "integer_out_of_range"),
            (#"{"blank":"   "}"#, "blank_string"),
            (#"{"Same":1,"same":"x"}"#, nil),
        ] as [(String, String?)])
    func structure(attributes: String, code: String?) throws {
        let outcome = try validate(#"{"name":"e","attributes":\#(attributes)}"#)
        switch outcome {
        case .valid: #expect(code == nil)
        case .invalid(let problems): #expect(problems.map(\.code) == [code].compactMap { $0 }, "\(problems)")
        }
    }

    @Test(
        "rule 17: $label ≤200 and $tags ≤10 × ≤64, lowercased and deduplicated, root only; no other $ key",
        arguments: [
            (#"{"$label":"\#(s(200))"}"#, nil), (#"{"$label":"\#(s(201))"}"#, "string_too_long"),
            (#"{"$label":5}"#, "invalid_type"),
            (#"{"$tags":[\#((0..<10).map { "\"t\($0)\"" }.joined(separator: ","))]}"#, nil),
            (#"{"$tags":[\#((0..<11).map { "\"t\($0)\"" }.joined(separator: ","))]}"#, "too_many_items"),
            (#"{"$tags":["\#(s(64))"]}"#, nil), (#"{"$tags":["\#(s(65))"]}"#, "string_too_long"),
            (#"{"$tags":[""]}"#, "empty_string"), (#"{"$tags":["a\nb"]}"#, "multiline_string"),
            (#"{"o":{"$label":"x"}}"#, "reserved_name"), (#"{"$price":1}"#, "reserved_name"),
        ] as [(String, String?)])
    func reserved(attributes: String, code: String?) throws {
        let outcome = try validate(#"{"name":"e","attributes":\#(attributes)}"#)
        switch outcome {
        case .valid: #expect(code == nil)
        case .invalid(let problems): #expect(problems.map(\.code) == [code].compactMap { $0 }, "\(problems)")
        }
    }
}
