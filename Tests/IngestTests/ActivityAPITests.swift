import Foundation
import HTTPTypes
import HeraldTestSupport
import Shared
import Testing

@testable import Ingest

@Suite("Ingest API: an app's activity (sessions, notifications opened)")
struct ActivityAPITests {
    static let batch = #"""
        {"installation_id":"I","custom_id":"paul","activity":[
          {"type":"session_start","session_id":"s-1","time":"2026-11-18T10:00:00+01:00"},
          {"type":"push_open","send_id":"0123456789abcdef0123456789abcdef","time":"2026-11-18T09:00:05Z"},
          {"type":"push_open","send_id":"0123456789abcdef0123456789abcdef","action":"BUY","time":"2026-11-18T09:00:06Z"},
          {"type":"session_end","session_id":"s-1","time":"2026-11-18T09:02:00Z","duration":115.5},
          {"type":"push_open","send_id":"0123456789abcdef0123456789abcdef","page":"look-2","time":"2026-11-18T09:00:07Z"},
          {"type":"session_end","session_id":"s-2","time":"2026-11-18T09:03:00Z","duration":-1}]}
        """#

    @Test("a batch: one record per valid item, keyed by the profile, ids derived from what each reports; an invalid item is dropped alone")
    func batch() async throws {
        let sink = FakeSink()
        let answer = try await call("/v1/app/activity", key: iosKey, body: Self.batch, sink: sink)
        #expect(answer.status == .ok)
        #expect(answer.accepted == 5)
        #expect(answer.problems == ["activity[5].duration out_of_range"])
        #expect(sink.records.map(\.op) == [.session, .pushOpen, .pushOpen, .session, .pushOpen])
        #expect(sink.records.allSatisfy { $0.key == "demo/paul" })
        #expect(
            sink.records.map(\.id) == [
                "app:session_start:I:s-1", "app:push_open:I:0123456789abcdef0123456789abcdef",
                "app:push_open:I:0123456789abcdef0123456789abcdef:BUY", "app:session_end:I:s-1",
                "app:push_open:I:0123456789abcdef0123456789abcdef:page:look-2",
            ])
        #expect(
            sink.records[0].json["session"].map { String(decoding: $0.serialized, as: UTF8.self) }
                == #"{"kind":"start","session_id":"s-1","time":"2026-11-18T09:00:00.000Z"}"#)
        #expect(
            sink.records[2].json["push_open"].map { String(decoding: $0.serialized, as: UTF8.self) }
                == #"{"send_id":"0123456789abcdef0123456789abcdef","action":"BUY","time":"2026-11-18T09:00:06.000Z"}"#)
        #expect(sink.records[3].json["session"]?["duration"] == .number("115.5"))
        #expect(sink.records[4].json["push_open"]?["page"]?.stringValue == "look-2")
        // Sent again (an SDK retrying its flush): the same ids, which the orchestrator applies once.
        let again = FakeSink()
        _ = try await call("/v1/app/activity", key: iosKey, body: Self.batch, sink: again)
        #expect(again.records.map(\.id) == sink.records.map(\.id))
    }

    @Test("an anonymous installation's activity is keyed by its home and marked unsigned")
    func anonymous() async throws {
        let sink = FakeSink()
        let answer = try await call(
            "/v1/app/activity", key: iosKey,
            body: #"{"installation_id":"I","activity":[{"type":"session_start","session_id":"s","time":"2026-11-18T09:00:00Z"}]}"#,
            sink: sink)
        #expect(answer.status == .ok)
        #expect(sink.records.map(\.key) == ["demo/install/I"])
        #expect(sink.records.first?.unsigned == true)
    }

    @Test(
        "each item is checked whole, every problem named by its path",
        arguments: [
            (#"{"session_id":"s","time":"2026-11-18T09:00:00Z"}"#, ["activity[0].type missing_field"]),
            (#"{"type":"session_pause","session_id":"s","time":"2026-11-18T09:00:00Z"}"#, ["activity[0].type invalid_value"]),
            (#"{"type":7}"#, ["activity[0].type invalid_value"]),
            (#"{"type":"session_start","time":"2026-11-18T09:00:00Z"}"#, ["activity[0].session_id missing_field"]),
            (#"{"type":"session_start","session_id":"s"}"#, ["activity[0].time missing_field"]),
            (#"{"type":"session_start","session_id":"s","time":"yesterday"}"#, ["activity[0].time invalid_date"]),
            (#"{"type":"session_start","session_id":"has space","time":"2026-11-18T09:00:00Z"}"#, ["activity[0].session_id invalid_session_id"]),
            (#"{"type":"session_start","session_id":"s","time":"2026-11-18T09:00:00Z","duration":3}"#, ["activity[0].duration unknown_field"]),
            (#"{"type":"session_end","session_id":"s","time":"2026-11-18T09:00:00Z","duration":604801}"#, ["activity[0].duration out_of_range"]),
            (#"{"type":"session_end","session_id":"s","time":"2026-11-18T09:00:00Z","duration":"3"}"#, ["activity[0].duration out_of_range"]),
            (#"{"type":"push_open","time":"2026-11-18T09:00:00Z"}"#, ["activity[0].send_id missing_field"]),
            (#"{"type":"push_open","send_id":"x","action":"buy now","time":"2026-11-18T09:00:00Z"}"#, ["activity[0].action invalid_action"]),
            (#"{"type":"push_open","send_id":5,"time":5}"#, ["activity[0].send_id invalid_type", "activity[0].time invalid_type"]),
            (#"{"type":"push_open","send_id":"x","session_id":"s","time":"2026-11-18T09:00:00Z"}"#, ["activity[0].session_id unknown_field"]),
            // Geofences (issue 60, item 3).
            (#"{"type":"geofence_enter","set_id":"stores","time":"2026-11-18T09:00:00Z"}"#, ["activity[0].geofence_id missing_field"]),
            (#"{"type":"geofence_exit","set_id":"a b","geofence_id":"louvre","time":"2026-11-18T09:00:00Z"}"#, ["activity[0].set_id invalid_id"]),
            // A Push Story's page (issue 60): an id as a button's, and never with a button.
            (#"{"type":"push_open","send_id":"x","page":"look 2","time":"2026-11-18T09:00:00Z"}"#, ["activity[0].page invalid_action"]),
            (#"{"type":"push_open","send_id":"x","action":"BUY","page":"look-2","time":"2026-11-18T09:00:00Z"}"#, ["activity[0].page invalid_value"]),
            (#""session_start""#, ["activity[0] invalid_type"]),
            (#"{"type":"in_app_click","message_id":"sale!","time":"2026-11-18T09:00:00Z"}"#, ["activity[0].message_id invalid_id"]),
            (#"{"type":"in_app_impression","message_id":"sale","button_id":"shop","time":"2026-11-18T09:00:00Z"}"#, ["activity[0].button_id unknown_field"]),
            (#"{"type":"card_view","time":"2026-11-18T09:00:00Z"}"#, ["activity[0].card_id missing_field"]),
            (#"{"type":"card_click","card_id":"0123456789ABCDEF0123456789abcdef","time":"2026-11-18T09:00:00Z"}"#, ["activity[0].card_id invalid_card_id"]),
            (#"{"type":"card_dismiss","card_id":"0123","time":"2026-11-18T09:00:00Z"}"#, ["activity[0].card_id invalid_card_id"]),
            (#"{"type":"card_dismiss","card_id":"0123456789abcdef0123456789abcdef","message_id":"x","time":"2026-11-18T09:00:00Z"}"#, ["activity[0].message_id unknown_field"]),
        ])
    func itemProblems(item: String, problems: [String]) async throws {
        let sink = FakeSink()
        let answer = try await call(
            "/v1/app/activity", key: iosKey, body: #"{"installation_id":"I","activity":[\#(item)]}"#, sink: sink)
        #expect(answer.status == .unprocessableContent)
        #expect(answer.problems == problems)
        #expect(sink.records.isEmpty)
    }

    @Test("card reports: one record per card, action and installation (a card counts one view, click and dismissal per profile)")
    func cards() async throws {
        let sink = FakeSink()
        let card = "0123456789abcdef0123456789abcdef"
        let items = ["view", "click", "dismiss", "view"].enumerated().map { index, action in
            #"{"type":"card_\#(action)","card_id":"\#(card)","time":"2026-11-18T09:00:0\#(index)Z"}"#
        }
        let answer = try await call(
            "/v1/app/activity", key: iosKey, body: #"{"installation_id":"I","activity":[\#(items.joined(separator: ","))]}"#, sink: sink)
        #expect(answer.status == .ok && answer.accepted == 4)
        #expect(sink.records.map(\.op) == [.contentCard, .contentCard, .contentCard, .contentCard])
        #expect(sink.records.map(\.id) == ["app:card_view:I:\(card)", "app:card_click:I:\(card)", "app:card_dismiss:I:\(card)", "app:card_view:I:\(card)"])
        #expect(
            sink.records[1].json["content_card"].map { String(decoding: $0.serialized, as: UTF8.self) }
                == #"{"action":"click","card":"\#(card)","time":"2026-11-18T09:00:01.000Z"}"#)
    }

    @Test("the list: required, an array, at most 200 items")
    func list() async throws {
        let item = #"{"type":"session_start","session_id":"s","time":"2026-11-18T09:00:00Z"}"#
        let cases: [(String, Int, [String])] = [
            (#"{"installation_id":"I"}"#, 422, ["activity missing_field"]),
            (#"{"installation_id":"I","activity":{}}"#, 422, ["activity invalid_type"]),
            (#"{"installation_id":"I","activity":[\#(Array(repeating: item, count: 201).joined(separator: ","))]}"#, 422, ["activity too_many_items"]),
            (#"{"installation_id":"I","activity":[\#(Array(repeating: item, count: 200).joined(separator: ","))]}"#, 200, []),
        ]
        for (body, status, problems) in cases {
            let answer = try await call("/v1/app/activity", key: iosKey, body: body)
            #expect(answer.status.code == status)
            #expect(answer.problems == problems)
        }
    }

    @Test("times from the contract check's fuzzing: year 91, an offset of -13:40")
    func oddTimes() async throws {
        let answer = try await call(
            "/v1/app/activity", key: iosKey,
            body: #"{"activity": [{"time": "0091-01-14T00:24:15-13:40", "session_id": "s", "type": "session_start"}], "installation_id": "I", "id": "0"}"#)
        #expect(answer.status == .ok, "\(answer.json)")
        let sink = FakeSink()
        _ = try await call(
            "/v1/app/activity", key: iosKey,
            body: #"{"activity": [{"time": "0091-01-14T00:24:15-13:40", "session_id": "s", "type": "session_start"}, {"time": "8638-10-20T20:37:01.7773+21:54", "type": "in_app_dismiss", "message_id": "m"}], "installation_id": "I", "id": "0"}"#,
            sink: sink)
        // The record as the broker gets it, and read back.
        for record in sink.records { #expect(try IngestRecord.read(record.value).id == record.id) }
        #expect(sink.records.count == 2)
    }

    /// A public key once stored 400 in-app impressions dated in the years 9998 and 9999, beyond every retention. A
    /// report's time is the device's clock: past an hour after the server's, it reads as the time of receipt; before
    /// 30 days ago, as 30 days ago. The record id keeps the time as sent, so a replay is still one report.
    @Test("client times held near the server's clock, record ids from the time as sent")
    func timesClamped() async throws {
        let sink = FakeSink()
        let answer = try await call(
            "/v1/app/activity", key: iosKey,
            body: #"""
                {"installation_id":"I","activity":[
                  {"type":"in_app_impression","message_id":"sale","time":"9999-12-31T23:59:59Z"},
                  {"type":"in_app_impression","message_id":"sale","time":"2026-11-18T12:06:00Z"},
                  {"type":"session_start","session_id":"s","time":"0001-01-01T00:00:00Z"},
                  {"type":"push_open","send_id":"x","time":"2026-11-18T11:00:00Z"}]}
                """#, sink: sink)
        #expect(answer.status == .ok && answer.accepted == 4)
        let times = sink.records.map { record in
            record.json[record.op == .inApp ? "in_app" : record.op == .session ? "session" : "push_open"]?["time"]?.stringValue
        }
        // The harness's clock reads 2026-11-18T11:06:40Z.
        #expect(times == ["2026-11-18T11:06:40.000Z", "2026-11-18T12:06:00.000Z", "2026-10-19T11:06:40.000Z", "2026-11-18T11:00:00.000Z"])
        #expect(sink.records[0].id == "app:in_app_impression:I:sale:9999-12-31T23:59:59.000Z")
    }

    @Test("a server key cannot report an app's activity")
    func serverKey() async throws {
        let answer = try await call("/v1/app/activity", key: restKey, body: Self.batch)
        #expect(answer.status == .forbidden)
    }
}

/// A tap on a button or a card whose action changes the profile (issue 60, item 4; batch-rules §8.4): the report, then
/// the writes it stands for, validated as the app's own.
@Suite("Ingest API: actions' profile writes")
struct ActionWritesAPITests {
    static let config = #"""
        {"kind":"project","id":"demo"}
        ---
        {"kind":"in_app_message","id":"sale","project":"demo","type":"modal","triggers":[{"session_start":true}],
         "buttons":[{"id":"like","action":{"id":"batch.group","args":{"actions":[
             ["batch.user.tag",{"a":"add","c":"interests","t":"ski"}],["batch.dismiss"],
             ["batch.user.event",{"e":"liked_sale","l":"spring","t":["promo"],"a":{"price":9.5}}]]}}},
                    {"id":"later","action":"dismiss"}],
         "variants":{"default":{"message":"Hi","button.like":"Like","button.later":"Later"}}}
        ---
        {"kind":"content_card","id":"guide","project":"demo","type":"classic","action":{"id":"batch.user.tag","args":{"a":"remove","c":"interests","t":"golf"}},
         "variants":{"default":{"title":"T","description":"D"}}}
        ---
        {"kind":"app","id":"demo-ios","project":"demo","platform":"ios","categories":{"SALE":{"actions":[
            {"id":"BUY","title":"Buy","action":{"id":"batch.user.event","args":{"e":"buy_tapped"}}}]}}}
        """#

    static func actions() throws -> ActionDirectory {
        let objects = config.components(separatedBy: "\n---\n")
        let (configuration, issues) = HeraldConfiguration.read(
            try objects.map { (file: "f.json", node: ConfigNode(json: try JSONParser.parse(Array($0.utf8)))) })
        #expect(issues.isEmpty, "\(issues)")
        let directory = ActionDirectory()
        directory.update(configuration)
        return directory
    }

    @Test("a button's group: the click, then the tag added and the event, with ids derived from the click's; a push button's event")
    func writes() async throws {
        let sink = FakeSink()
        let body = #"""
            {"installation_id":"I","custom_id":"paul","activity":[
              {"type":"in_app_click","message_id":"sale","button_id":"like","time":"2026-11-18T09:00:00Z"},
              {"type":"in_app_click","message_id":"sale","button_id":"later","time":"2026-11-18T09:00:01Z"},
              {"type":"push_open","send_id":"0123456789abcdef0123456789abcdef","action":"BUY","time":"2026-11-18T09:00:03Z"}]}
            """#
        let answer = try await call("/v1/app/activity", key: iosKey, body: body, sink: sink, actions: try Self.actions())
        #expect(answer.status == .ok, "\(answer)")
        // The second button only dismisses: nothing follows its click.
        #expect(sink.records.map(\.op) == [.inApp, .profileUpdate, .event, .inApp, .pushOpen, .event])
        let click = sink.records[0].id
        #expect(sink.records[1].id == "\(click):action:0" && sink.records[2].id == "\(click):action:1")
        #expect(sink.records[1].json["profile"].map { String(decoding: $0.serialized, as: UTF8.self) }?.contains(#""ski""#) == true)
        #expect(sink.records[2].json["event"]?["name"]?.stringValue == "LIKED_SALE")
        #expect(sink.records[2].json["event"]?["label"]?.stringValue == "spring")
        #expect(sink.records[5].json["event"]?["name"]?.stringValue == "BUY_TAPPED")
        #expect(sink.records.allSatisfy { $0.key == "demo/paul" })
        // Sent again: the same ids (applied once).
        let again = FakeSink()
        _ = try await call("/v1/app/activity", key: iosKey, body: body, sink: again, actions: try Self.actions())
        #expect(again.records.map(\.id) == sink.records.map(\.id))
    }
}

@Suite("Ingest API: geofence reports")
struct GeofenceReportAPITests {
    @Test("an entry and an exit: one record each, ids from the installation, set, geofence and time")
    func records() async throws {
        let sink = FakeSink()
        let body = #"""
            {"installation_id":"I","custom_id":"paul","activity":[
              {"type":"geofence_enter","set_id":"stores","geofence_id":"louvre","time":"2026-11-18T09:00:00Z"},
              {"type":"geofence_exit","set_id":"stores","geofence_id":"louvre","time":"2026-11-18T09:20:00Z"}]}
            """#
        let answer = try await call("/v1/app/activity", key: iosKey, body: body, sink: sink)
        #expect(answer.status == .ok && answer.accepted == 2, "\(answer)")
        #expect(sink.records.map(\.op) == [.geofence, .geofence])
        #expect(sink.records.map(\.id) == [
            "app:geofence_enter:I:stores:louvre:2026-11-18T09:00:00.000Z", "app:geofence_exit:I:stores:louvre:2026-11-18T09:20:00.000Z",
        ])
        #expect(sink.records[0].json["geofence"]?["kind"]?.stringValue == "enter")
    }
}
