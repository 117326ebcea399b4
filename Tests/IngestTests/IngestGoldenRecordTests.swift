import Foundation
import HTTPTypes
import HeraldTestSupport
import Shared
import Testing

@testable import Ingest

/// Every endpoint of the ingest writes the records it wrote before they had typed payloads (`IngestGoldens.ingest`,
/// captured at 89ff821 by these same calls): the same keys, the same bytes, for an apps file of that time (signed
/// identity turned off in so many words, sources that may set contact fields). With today's defaults the same calls
/// write the same records but for `"unsigned":true` on the app writes that name no custom ID.
@Suite("herald.ingest: the ingest writes the golden records")
struct IngestGoldenRecordTests {
    @Test("every endpoint's records are the golden ones, byte for byte")
    func goldenRecords() async throws {
        let lines = try await Self.captured(catalog: legacyCatalog())
        let goldens = IngestGoldens.ingest.split(separator: "\n").map(String.init)
        #expect(lines.count == goldens.count)
        for (line, golden) in zip(lines, goldens) { #expect(line == golden) }
    }

    @Test("with signed identity (the default), the same records, and app writes without a custom ID flagged unsigned")
    func signedDefaults() async throws {
        var catalog = try AppsCatalog.load(path: sampleAppsFile)
        catalog.projects[0].sources[0].contactFields = true
        let signed = try await Self.captured(catalog: catalog, segmentSigned: true)
        let goldens = IngestGoldens.ingest.split(separator: "\n").map(String.init)
        #expect(signed.count == goldens.count)
        var flagged: [String] = []
        for (line, golden) in zip(signed, goldens) {
            let name = String(golden.prefix { $0 != "\t" })
            if line == golden { continue }
            // The differences: `"unsigned":true` after `received_at` and the payload (an app write without its user's
            // proof), `"public_key":true` (a user's write through a Segment source whose key is public).
            let unflagged = line.replacingOccurrences(of: #","unsigned":true"#, with: "").replacingOccurrences(of: #","public_key":true"#, with: "")
            #expect(unflagged == golden, "\(name)")
            flagged.append(name + (line.contains(#""public_key":true"#) ? " public" : ""))
        }
        #expect(
            flagged == [
                "app-logout#0", "app-profile-anonymous#0", "app-events#0", "app-events#1", "app-installation#0",
                "app-installation-erase#0", "app-push-token#0", "app-location#0", "app-location-short#0", "app-opt-out#0",
                "app-wipe#0", "segment-batch#0 public", "segment-batch#1", "segment-batch#2 public", "segment-batch#3 public",
            ])
    }

    static func captured(catalog: AppsCatalog, segmentSigned: Bool = false) async throws -> [String] {
        var lines: [String] = []
        func capture(_ name: String, _ uri: String, method: HTTPRequest.Method = .post, key: String? = nil, rest: Bool = false,
                     body: String? = nil, headers: HTTPFields = [:]) async throws {
            let sink = FakeSink()
            var all = headers
            all[HTTPField.Name("Idempotency-Key")!] = "golden-\(name)"
            let answer = try await call(uri, method: method, key: key, rest: rest, body: body, headers: all, sink: sink, catalog: catalog)
            #expect((200..<300).contains(Int(answer.status.code)), "\(name): \(answer.json)")
            #expect(!sink.records.isEmpty, "\(name)")
            for (index, record) in sink.records.enumerated() {
                lines.append("\(name)#\(index)\t\(record.key)\t\(String(decoding: record.value, as: UTF8.self))")
            }
        }
        let installation = "8B2C0F4E-0000-4000-8000-000000000001"
        try await capture("server-update", "/v1/profiles/update", key: restKey, rest: true, body: #"""
            [{"identifiers":{"custom_id":"paul"},
              "attributes":{"$email_address":"paul@example.com","$email_marketing":"subscribed","$phone_number":"+33612345678",
                "$sms_marketing":"unsubscribed","$language":"FR","$region":"BE","$timezone":"Europe/Paris","Age":26,"score":1.5,
                "vip":true,"plan":"gold","since":{"$date":"2026-01-01T00:00:00Z"},"site":{"$url":"https://example.com"},
                "interests":["a","b"],"visits":{"$add":["x"],"$remove":["y"]},"gone":null},
              "events":[{"name":"purchased","id":"evt-1","time":"2026-11-22T10:00:00Z","attributes":{
                "sub_category":"bags","end_of_sale_date":{"$date":"2026-12-01T00:00:00Z"},"count":3,"ratio":0.25,"ok":false,
                "items_list":[{"name":"Basil","price":23.99,"item_url":{"$url":"https://example.com/basil"},"in_sales":true}],
                "meta":{"level":{"deep":"x"}},"words":["one","two"],
                "$label":"legacy_label","$tags":["Spring","spring","sale"]}},{"name":"app_open"}]},
             {"identifiers":{"custom_id":"zoe"},"events":[{"name":"opened","attributes":{"n":1}}]},
             {"identifiers":{"custom_id":"émile/ü"},"attributes":{"$email_address":null,"$language":null}}]
            """#)
        try await capture("server-delete", "/v1/profiles/paul", method: .delete, key: restKey, rest: true)
        try await capture("server-trigger", "/v1/campaigns/trigger", key: restKey, rest: true, body: #"""
            {"campaign_id":"login-code","trigger_properties":{"b":1,"a":"x","c":true},
             "recipients":[{"custom_id":"paul","trigger_properties":{"code":"4821","n":2.5}},{"custom_id":"zoe","id":"t-2"}]}
            """#)
        try await capture("server-journey", "/v1/journeys/trigger", key: restKey, rest: true, body: #"""
            {"journey_id":"onboarding","entry_properties":{"plan":"gold"},"recipients":[{"custom_id":"paul","entry_properties":{"days":14}}]}
            """#)
        try await capture("app-identify", "/v1/app/identify", key: iosKey, body: #"{"installation_id":"\#(installation)","custom_id":"paul"}"#)
        try await capture("app-logout", "/v1/app/identify", key: iosKey, body: #"{"installation_id":"\#(installation)","custom_id":null}"#)
        try await capture("app-profile", "/v1/app/profile", key: iosKey, body: #"{"installation_id":"\#(installation)","custom_id":"paul","attributes":{"$language":"de","plan":"free"}}"#)
        try await capture("app-profile-anonymous", "/v1/app/profile", key: androidKey, body: #"{"installation_id":"\#(installation)","attributes":{"plan":"free"}}"#)
        try await capture("app-events", "/v1/app/events", key: iosKey, body: #"{"installation_id":"\#(installation)","events":[{"name":"app_open"},{"name":"add_to_cart","id":"e-9","attributes":{"price":12}}]}"#)
        try await capture("app-events-dev", "/v1/app/events", key: iosDevKey, body: #"{"installation_id":"\#(installation)","custom_id":"paul","events":[{"name":"app_open"}]}"#)
        try await capture("app-installation", "/v1/app/installation", key: iosKey, body: #"""
            {"installation_id":"\#(installation)","app_version":"3.2.1","app_build":"321","os_version":"18.1","sdk_version":"1.0",
             "device_brand":"Apple","device_model":"iPhone15,2","detected_language":"fr","detected_region":"BE",
             "timezone":"Europe/Brussels","notification_permission":"allowed","data_collection":{"geoip":true,"device_model":true}}
            """#)
        try await capture("app-installation-erase", "/v1/app/installation", key: iosKey, body: #"{"installation_id":"\#(installation)","device_model":null,"data_collection":{"device_model":false}}"#)
        try await capture("app-push-token", "/v1/app/push-token", key: iosKey, body: #"{"installation_id":"\#(installation)","token":"\#(String(repeating: "AB", count: 32))","environment":"production"}"#)
        try await capture("app-push-token-android", "/v1/app/push-token", key: androidKey, body: #"{"installation_id":"\#(installation)","custom_id":"paul","token":"fcm:token-1","environment":"sandbox"}"#)
        try await capture("app-location", "/v1/app/location", key: iosKey, body: #"{"installation_id":"\#(installation)","latitude":48.8566,"longitude":2.3522,"accuracy":12,"time":"2026-11-22T10:00:00+01:00"}"#)
        try await capture("app-location-short", "/v1/app/location", key: iosKey, body: #"{"installation_id":"\#(installation)","latitude":-90,"longitude":180}"#)
        try await capture("app-opt-out", "/v1/app/opt-out", key: iosKey, body: #"{"installation_id":"\#(installation)"}"#)
        try await capture("app-opt-in", "/v1/app/opt-in", key: iosKey, body: #"{"installation_id":"\#(installation)","custom_id":"paul"}"#)
        try await capture("app-wipe", "/v1/app/wipe", key: iosKey, body: #"{"installation_id":"\#(installation)"}"#)
        try await capture("sends-push-installation", "/v1/sends/push", key: restKey, rest: true, body: #"""
            {"installation_id":"\#(installation)","id":"order-42",
             "notification":{"title":"Shipped","body":"Arriving Thursday","badge":"+1"},"payload":{"order":42,"tags":["a"],"deep":{"x":null}}}
            """#)
        try await capture("sends-push-token", "/v1/sends/push", key: restKey, rest: true, body: #"""
            {"token":"\#(String(repeating: "cd", count: 32))","app":"demo-ios","environment":"sandbox","campaign":"receipts",
             "notification":{"title":"Hi","body":"There"}}
            """#)
        try await capture("braze-track", "/users/track", key: restKey, rest: true, body: #"""
            {"attributes":[{"external_id":"ann","first_name":"Ann","email":"ann@example.com","visits":{"inc":1},"tags":["x","y"],
                            "last_seen":"2026-11-24T10:00:00-08:00","score":3.5,"gone":null,"flag":true},
                           {"user_alias":{"alias_name":"42","alias_label":"crm"},"plan":"gold"}],
             "events":[{"external_id":"ann","name":"Song Played","time":"2026-11-24T10:00:00Z","properties":{"genre":"jazz","n":2}},
                       {"user_alias":{"alias_name":"42","alias_label":"crm"},"_update_existing_only":false,"name":"opened","time":"2026-11-24T10:00:00Z"}],
             "purchases":[{"external_id":"ann","product_id":"sku-1","currency":"EUR","price":9.99,"quantity":2,"time":"2026-11-24T10:00:00Z","properties":{"color":"red"}},
                          {"external_id":"ann","product_id":"sku-2","currency":"CHF","price":5,"quantity":1,"time":"2026-11-24T10:00:00Z"}]}
            """#)
        try await capture("braze-identify", "/users/identify", key: restKey, rest: true, body: #"{"aliases_to_identify":[{"external_id":"ann","user_alias":{"alias_name":"42","alias_label":"crm"}}]}"#)
        try await capture("braze-alias-new", "/users/alias/new", key: restKey, rest: true, body: #"{"user_aliases":[{"alias_name":"7","alias_label":"web"},{"external_id":"ann","alias_name":"8","alias_label":"web"}]}"#)
        try await capture("braze-delete", "/users/delete", key: restKey, rest: true, body: #"{"external_ids":["ann"],"user_aliases":[{"alias_name":"7","alias_label":"web"}]}"#)
        // Signed: the proof of `ann` under the web source's secret, where Segment's libraries carry a destination's options.
        let proof = segmentSigned ? #","integrations":{"Herald":{"custom_id_auth":"\#(segmentProof("ann"))"}}"# : ""
        try await capture("segment-batch", "/v1/batch", body: #"""
            {"batch":[{"type":"identify","userId":"ann","messageId":"m-1","traits":{"email":"ann@example.com","plan":"gold"},"timestamp":"2026-11-24T10:00:00Z"\#(proof)},
                      {"type":"track","anonymousId":"anon-1","event":"Song Played","messageId":"m-2","properties":{"genre":"jazz"},"timestamp":"2026-11-24T10:00:00Z"},
                      {"type":"track","userId":"ann","event":"Order Completed","messageId":"m-3","timestamp":"2026-11-24T10:00:00Z"\#(proof),
                       "properties":{"currency":"EUR","products":[{"product_id":"p1","price":3,"quantity":2},{"product_id":"p2","price":1.5}]}}]}
            """#, headers: basic(writeKey))
        // An app's activity (issue 35): ids derived from what each item reports.
        try await capture("app-activity", "/v1/app/activity", key: iosKey, body: #"""
            {"installation_id":"\#(installation)","custom_id":"paul","activity":[
              {"type":"session_start","session_id":"s-1","time":"2026-11-18T10:00:00+01:00"},
              {"type":"push_open","send_id":"0123456789abcdef0123456789abcdef","action":"BUY","time":"2026-11-18T09:00:06Z"},
              {"type":"session_end","session_id":"s-1","time":"2026-11-18T09:02:00Z","duration":115.5},
              {"type":"in_app_click","message_id":"ski-sale","button_id":"shop","time":"2026-11-18T09:01:00Z"},
              {"type":"card_dismiss","card_id":"0123456789abcdef0123456789abcdef","time":"2026-11-18T09:02:00Z"},
              {"type":"geofence_enter","set_id":"stores","geofence_id":"rivoli","time":"2026-11-18T09:03:00Z"}]}
            """#)
        return lines
    }
}
