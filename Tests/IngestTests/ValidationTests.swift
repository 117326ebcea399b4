import Foundation
import Shared
import Testing

@testable import Ingest

private func json(_ text: String) throws -> JSONValue { try JSONParser.parse(Array(text.utf8)) }
private func s(_ count: Int, _ character: Character = "a") -> String { String(repeating: character, count: count) }

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
            String(decoding: event.serialized, as: UTF8.self)
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
