import Foundation
import HTTPTypes
import HeraldTestSupport
import Shared
import Testing

@testable import Ingest

/// `/users/track` with one attributes, event or purchase object, and what it stored.
func track(_ array: String, _ object: String, sink: FakeSink = FakeSink()) async throws -> (Answer, [IngestRecord]) {
    let answer = try await call("/users/track", key: restKey, rest: true, body: #"{"\#(array)": [\#(object)]}"#, sink: sink)
    return (answer, sink.records)
}

extension Answer {
    /// `path code` of Braze's `errors` and of `adjusted`.
    var brazeErrors: [String] { list("errors") }
    var adjusted: [String] { list("adjusted") }

    func list(_ name: String) -> [String] {
        guard case .array(let items)? = json[name] else { return [] }
        return items.compactMap { item in
            guard let path = item["path"]?.stringValue, let code = item["code"]?.stringValue else { return nil }
            return "\(path) \(code)"
        }
    }
}

extension IngestRecord {
    /// A custom attribute of a `profile_update` as stored (`name.type` → value).
    func custom(_ key: String) -> JSONValue? { json["profile"]?["custom_attributes"]?[key] }
    /// A member of the record as stored (`event`, `purchase`, `update_existing_only`, …).
    func field(_ name: String) -> JSONValue? { json[name] }
}

let long255 = String(repeating: "é", count: 255)
let long256 = String(repeating: "é", count: 256)

@Suite("Braze's /users/track: every rule on both sides of its limit (braze-rules §2–3, §13)")
struct BrazeTrackTests {
    @Test("rule 1: a string value of 255 characters is kept, of 256 cut to 255 and reported; so is a key")
    func strings() async throws {
        let (kept, keptRecords) = try await track("attributes", #"{"external_id":"ann","bio":"\#(long255)"}"#)
        #expect(kept.status.code == 201 && kept.json["message"] == .string("success"))
        #expect(keptRecords.first?.custom("bio.s") == .string(long255))
        #expect(kept.adjusted.isEmpty)
        let (cut, cutRecords) = try await track("attributes", #"{"external_id":"ann","bio":"\#(long256)"}"#)
        #expect(cutRecords.first?.custom("bio.s") == .string(long255))
        #expect(cut.adjusted == ["attributes[0].bio string_truncated"])
        #expect(cut.json["attributes_processed"] == .number("1"))
        // A key over 255 is cut, then mapped to Herald's 30 characters with a hash.
        let key = String(repeating: "k", count: 256)
        let (longKey, keyRecords) = try await track("attributes", #"{"external_id":"ann","\#(key)":1}"#)
        #expect(longKey.adjusted.contains("attributes[0].\(key) name_truncated"))
        let stored = try #require(keyRecords.first?.json["profile"]?["custom_attributes"])
        guard case .object(let members) = stored else { throw Failure("no attributes") }
        #expect(members.count == 1 && members[0].key.hasPrefix(String(repeating: "k", count: 21) + "_") && members[0].key.count == 32)
    }

    @Test("rule 2: an array of 100 items is kept, of 101 cut to the first 100 and reported; numbers become text")
    func arrays() async throws {
        let hundred = (1...100).map { "\"i\($0)\"" }.joined(separator: ",")
        let (kept, keptRecords) = try await track("attributes", #"{"external_id":"ann","tags":[\#(hundred)]}"#)
        guard case .array(let items)? = keptRecords.first?.custom("tags.a") else { throw Failure("no array") }
        #expect(items.count == 100 && kept.adjusted.isEmpty)
        let (cut, cutRecords) = try await track("attributes", #"{"external_id":"ann","tags":[\#(hundred),"i101"]}"#)
        guard case .array(let cutItems)? = cutRecords.first?.custom("tags.a") else { throw Failure("no array") }
        #expect(cutItems.count == 100 && cutItems.last == .string("i100"))
        #expect(cut.adjusted == ["attributes[0].tags array_truncated"])
        let (_, mixed) = try await track("attributes", #"{"external_id":"ann","tags":["a",2,true]}"#)
        #expect(mixed.first?.custom("tags.a") == .array([.string("a"), .string("2"), .string("true")]))
        // add and remove edit the stored array (the orchestrator keeps the attribute's limit, oldest dropped).
        let (_, edit) = try await track("attributes", #"{"external_id":"ann","tags":{"add":["x"],"remove":["y"]}}"#)
        #expect(edit.first?.custom("tags.a") == .object([JSONMember("$add", .array([.string("x")])), JSONMember("$remove", .array([.string("y")]))]))
    }

    @Test("rule 3: null removes the attribute")
    func null() async throws {
        let (_, records) = try await track("attributes", #"{"external_id":"ann","tags":null}"#)
        #expect(records.first?.custom("tags") == .null)
    }

    @Test("rule 4: {\"inc\": n} takes a whole number, positive or negative; anything else is refused")
    func increments() async throws {
        let (_, records) = try await track("attributes", #"{"external_id":"ann","visits":{"inc":-2},"logins":{"inc":1}}"#)
        #expect(records.first?.custom("visits.i") == .object([JSONMember("$inc", .number("-2"))]))
        #expect(records.first?.custom("logins.i") == .object([JSONMember("$inc", .number("1"))]))
        let (answer, bad) = try await track("attributes", #"{"external_id":"ann","visits":{"inc":1.5},"plan":"gold"}"#)
        #expect(answer.brazeErrors == ["attributes[0].visits.inc invalid_increment"])
        #expect(bad.first?.custom("visits.i") == nil && bad.first?.custom("plan.s") == .string("gold"))
    }

    @Test(
        "rule 5: ISO 8601 with an offset is a date, stored as the instant; without a zone it stays a string",
        arguments: [
            ("2013-07-16T19:20:30+01:00", "2013-07-16T18:20:30.000Z"), ("2016-12-14T13:32:31.601-0800", "2016-12-14T21:32:31.601Z"),
        ])
    func dates(text: String, instant: String) async throws {
        let (_, records) = try await track("attributes", #"{"external_id":"ann","seen":"\#(text)","day":"2016-12-14","dob":"1980-12-21"}"#)
        #expect(records.first?.custom("seen.t") == .string(instant))
        #expect(records.first?.custom("day.s") == .string("2016-12-14"))
        #expect(records.first?.custom("dob.t") == .string("1980-12-21T00:00:00.000Z"))
    }

    @Test("rule 6: the six reserved property keys and '$' keys are refused, the event kept; others are mapped", arguments: LenientValues.reservedPropertyKeys.sorted())
    func reservedKeys(key: String) async throws {
        let (answer, records) = try await track(
            "events", #"{"external_id":"ann","name":"Clicked","time":"2026-11-24T10:00:00Z","properties":{"\#(key)":1,"$x":1,"Item Count":2}}"#)
        #expect(answer.brazeErrors.sorted() == ["events[0].properties.$x reserved_name", "events[0].properties.\(key) reserved_name"])
        let event = try #require(records.first?.field("event"))
        #expect(event["name"] == .string("CLICKED"))
        #expect(event["attributes"] == .object([JSONMember("item_count.i", .number("2"))]))
    }

    @Test("an event needs a name and a time (ISO 8601 with a zone); a name over 255 is cut, then mapped")
    func eventFields() async throws {
        let (noTime, none) = try await track("events", #"{"external_id":"ann","name":"Clicked"}"#)
        #expect(noTime.status.code == 422 && none.isEmpty && noTime.brazeErrors == ["events[0] missing_field"])
        let (badTime, _) = try await track("events", #"{"external_id":"ann","name":"Clicked","time":"yesterday"}"#)
        #expect(badTime.brazeErrors == ["events[0] invalid_time"])
        let (long, records) = try await track("events", #"{"external_id":"ann","name":"\#(long256)","time":"2026-11-24T10:00:00Z"}"#)
        #expect(long.adjusted.contains("events[0].name string_truncated") && long.adjusted.contains("events[0].name name_shortened"))
        // `é` folds to `E`: 21 of them, `_` and the hash of the original name.
        let name = try #require(records.first?.field("event")?["name"]?.stringValue)
        #expect(name.hasPrefix(String(repeating: "E", count: 21) + "_") && name.count == 30)
    }

    @Test("rule 7: nested properties keep Herald's limits: 3 levels, 20 names per object, 25 items per array")
    func nested() async throws {
        let deep = #"{"a":{"b":{"c":{"d":1}}}}"#
        let many = "{" + (1...21).map { "\"p\($0)\":\($0)" }.joined(separator: ",") + "}"
        let items = "[" + (1...26).map(String.init).joined(separator: ",") + "]"
        let (answer, records) = try await track(
            "events", #"{"external_id":"ann","name":"n","time":"2026-11-24T10:00:00Z","properties":{"deep":\#(deep),"many":\#(many),"list":\#(items)}}"#)
        #expect(answer.brazeErrors.contains("events[0].properties.deep.a.b.c too_deep"))
        #expect(answer.brazeErrors.contains("events[0].properties.many.p21 too_many_attributes"))
        #expect(answer.adjusted.contains("events[0].properties.list array_truncated"))
        let attributes = try #require(records.first?.field("event")?["attributes"])
        guard case .array(let list)? = attributes["list.a"], case .object(let manyMembers)? = attributes["many.o"] else { throw Failure("shape") }
        #expect(list.count == 25 && manyMembers.count == 20)
    }

    @Test(
        "rules 8–10: product id 1–255, an ISO 4217 currency in any case, a quantity 1–100 (absent: 1)",
        arguments: [
            (#""product_id":"","currency":"USD","price":1"#, "purchases[0].product_id missing_product_id"),
            (#""product_id":"\#(long256)","currency":"USD","price":1"#, "purchases[0].product_id product_id_too_long"),
            (#""product_id":"\#(long255)","currency":"usd","price":1"#, nil),
            (#""product_id":"p","currency":"SPD","price":1"#, "purchases[0].currency invalid_currency"),
            (#""product_id":"p","currency":"EUR","price":"1""#, "purchases[0].price invalid_price"),
            (#""product_id":"p","currency":"USD","price":1,"quantity":0"#, "purchases[0].quantity invalid_quantity"),
            (#""product_id":"p","currency":"USD","price":1,"quantity":1"#, nil),
            (#""product_id":"p","currency":"USD","price":1,"quantity":100"#, nil),
            (#""product_id":"p","currency":"USD","price":1,"quantity":101"#, "purchases[0].quantity invalid_quantity"),
        ] as [(String, String?)])
    func purchaseLimits(fields: String, error: String?) async throws {
        let (answer, records) = try await track("purchases", #"{"external_id":"ann","time":"2026-11-24T10:00:00Z",\#(fields)}"#)
        if let error {
            #expect(answer.brazeErrors == [error] && records.isEmpty)
        } else {
            #expect(answer.brazeErrors.isEmpty && records.count == 1 && records.first?.op == .purchase)
        }
    }

    @Test("rules 10–12: 10 USD × 3 is revenue 30; another currency at the project's rate; without a rate, no revenue (reported)")
    func revenue() async throws {
        func purchase(_ currency: String, quantity: String = "") async throws -> (Answer, JSONValue?) {
            let (answer, records) = try await track(
                "purchases", #"{"external_id":"ann","product_id":"p","currency":"\#(currency)","price":10,\#(quantity)"time":"2026-11-24T10:00:00Z"}"#)
            return (answer, records.first?.field("purchase"))
        }
        let (_, usd) = try await purchase("USD", quantity: #""quantity":3,"#)
        #expect(usd?["revenue_usd"] == .number("30.0") && usd?["quantity"] == .number("3"))
        let (_, single) = try await purchase("USD")
        #expect(single?["quantity"] == .number("1"))
        let (_, eur) = try await purchase("EUR", quantity: #""quantity":3,"#)
        #expect(eur?["revenue_usd"] == .number("32.4"))
        let (answer, chf) = try await purchase("CHF")
        #expect(chf?["revenue_usd"] == nil && chf?["currency"] == .string("CHF"))
        #expect(answer.adjusted == ["purchases[0].currency no_usd_rate"])
    }

    @Test("an e-commerce Order Completed event with products arrives as purchases, as from Segment")
    func orderCompleted() async throws {
        let (answer, records) = try await track(
            "events",
            #"{"external_id":"ann","name":"Order Completed","time":"2026-11-24T10:00:00Z","properties":{"order_id":"o-9","currency":"EUR","revenue":20,"products":[{"product_id":"p1","price":10,"quantity":2},{"sku":"p2","price":"free"}]}}"#)
        #expect(records.map(\.op) == [.purchase] && answer.json["events_processed"] == .number("1"))
        #expect(records.first?.field("purchase")?["revenue_usd"] == .number("21.6"))
        #expect(records.first?.field("purchase")?["properties"]?["order_id.s"] == .string("o-9"))
        #expect(answer.brazeErrors == ["events[0].properties.products[1].price invalid_price"])
    }

    @Test("who: external_id or user_alias, never both nor neither; braze_id is refused; update-only by default for an alias")
    func identifiers() async throws {
        let (neither, _) = try await track("attributes", #"{"plan":"gold"}"#)
        #expect(neither.brazeErrors == ["attributes[0] missing_identifier"])
        #expect(neither.json["errors"]?[0]?["input_array"] == .string("attributes") && neither.json["errors"]?[0]?["index"] == .number("0"))
        let (both, _) = try await track("attributes", #"{"external_id":"a","user_alias":{"alias_name":"n","alias_label":"l"},"plan":"gold"}"#)
        #expect(both.brazeErrors == ["attributes[0] invalid_identifier"])
        let (braze, _) = try await track("attributes", #"{"braze_id":"x","plan":"gold"}"#)
        #expect(braze.brazeErrors == ["attributes[0] unsupported_identifier"])
        let (badAlias, _) = try await track("attributes", #"{"user_alias":{"alias_name":"","alias_label":"l"},"plan":"gold"}"#)
        #expect(badAlias.brazeErrors == ["attributes[0] invalid_alias"])
        let (_, byAlias) = try await track("attributes", #"{"user_alias":{"alias_name":"n/1","alias_label":"l/x"},"plan":"gold"}"#)
        #expect(byAlias.first?.alias == UserAlias(label: "l/x", name: "n/1") && byAlias.first?.key == "demo/alias/l%2Fx/n/1")
        #expect(byAlias.first?.field("update_existing_only") == .bool(true))
        let (_, created) = try await track("attributes", #"{"user_alias":{"alias_name":"n","alias_label":"l"},"_update_existing_only":false,"plan":"gold"}"#)
        #expect(created.first?.field("update_existing_only") == nil)
        let (_, byID) = try await track("attributes", #"{"external_id":"ann","plan":"gold"}"#)
        #expect(byID.first?.field("update_existing_only") == nil && byID.first?.key == "demo/ann")
        let (_, onlyExisting) = try await track("attributes", #"{"external_id":"ann","_update_existing_only":true,"plan":"gold"}"#)
        #expect(onlyExisting.first?.field("update_existing_only") == .bool(true))
    }

    @Test("standard attributes: email, phone, language, country, time zone and email_subscribe are Herald's natives")
    func standardAttributes() async throws {
        let (answer, records) = try await track(
            "attributes",
            #"{"external_id":"ann","email":"ann@example.com","phone":"+33612345678","language":"fr","country":"fr","time_zone":"Europe/Paris","email_subscribe":"opted_in","first_name":"Ann","push_subscribe":"opted_in"}"#)
        let profile = try #require(records.first?.field("profile"))
        #expect(profile["email"] == .string("ann@example.com") && profile["phone_number"] == .string("+33612345678"))
        #expect(profile["language"] == .string("fr") && profile["region"] == .string("FR") && profile["timezone"] == .string("Europe/Paris"))
        #expect(profile["email_marketing"] == .string("subscribed"))
        #expect(records.first?.custom("first_name.s") == .string("Ann"))
        #expect(answer.brazeErrors == ["attributes[0].push_subscribe unsupported_attribute"])
    }

    @Test("Braze's answers: 75 objects per array at most; errors in Braze's shape; a project without compatibility: braze is refused")
    func answers() async throws {
        let many = (0...75).map { _ in #"{"external_id":"a","x":1}"# }.joined(separator: ",")
        let tooMany = try await call("/users/track", key: restKey, rest: true, body: #"{"attributes":[\#(many)]}"#)
        #expect(tooMany.status.code == 400 && tooMany.json["message"] != nil && tooMany.json["error"] == nil)
        let unauthorized = try await call("/users/track", key: "nope_0123456789abcdef", rest: true, body: "{}")
        #expect(unauthorized.status.code == 401 && unauthorized.json["message"] != nil)
        var catalog = try AppsCatalog.load(path: sampleAppsFile)
        catalog.projects[0].compatibility = .batch
        let off = try await call("/users/track", key: restKey, rest: true, body: #"{"attributes":[]}"#, catalog: catalog)
        #expect(off.status.code == 403 && off.json["code"] == .string("compatibility_off"))
    }

    @Test("aliases: /users/alias/new and /users/identify write alias records; /users/delete deletes by id or alias")
    func aliasEndpoints() async throws {
        let sink = FakeSink()
        let created = try await call(
            "/users/alias/new", key: restKey, rest: true,
            body: #"{"user_aliases":[{"alias_name":"n","alias_label":"l"},{"external_id":"ann","alias_name":"m","alias_label":"l"}]}"#, sink: sink)
        #expect(created.json["aliases_processed"] == .number("2"))
        let identify = try await call(
            "/users/identify", key: restKey, rest: true,
            body: #"{"aliases_to_identify":[{"external_id":"bob","user_alias":{"alias_name":"n","alias_label":"l"}},{"user_alias":{"alias_name":"n","alias_label":"l"}}]}"#, sink: sink)
        #expect(identify.brazeErrors == ["aliases_to_identify[1] missing_field"])
        let deleted = try await call(
            "/users/delete", key: restKey, rest: true,
            body: #"{"external_ids":["ann"],"user_aliases":[{"alias_name":"n","alias_label":"l"}]}"#, sink: sink)
        #expect(deleted.json["deleted"] == .number("2"))
        #expect(sink.records.map(\.key) == ["demo/alias/l/n", "demo/ann", "demo/bob", "demo/ann", "demo/alias/l/n"])
        #expect(sink.records.map(\.op) == [.alias, .alias, .alias, .profileDelete, .profileDelete])
    }
}
