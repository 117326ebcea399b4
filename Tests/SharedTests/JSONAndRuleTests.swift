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
