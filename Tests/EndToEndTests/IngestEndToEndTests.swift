import Foundation
import HeraldTestSupport
import Shared
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

@Suite("Ingest end to end", .timeLimit(.minutes(5)))
struct IngestEndToEndTests {
    @Test("HTTP → herald-ingest → embedded broker: the record read back from herald.ingest is the one accepted")
    func httpToTopic() async throws {
        let (cluster, ingest, port) = try await startIngest()
        let (status, body) = try await httpPost(
            "http://127.0.0.1:\(port)/v1/profiles/update",
            headers: ["Authorization": "Bearer rest_demo_0123456789abcdef", "X-Request-Id": "e2e-1"],
            body: #"[{"identifiers":{"custom_id":"paul"},"id":"e2e-update","attributes":{"plan":"gold","$region":"fr"},"events":[{"name":"signed_up"}]}]"#
        )
        #expect(status == 200, "\(body)")
        let (appStatus, appBody) = try await httpPost(
            "http://127.0.0.1:\(port)/v1/app/events",
            headers: ["X-Api-Key": "live_demo_ios_0123456789"],
            body: #"{"installation_id":"INST-9","events":[{"name":"app_open","id":"e2e-event"}]}"#)
        #expect(appStatus == 200, "\(appBody)")

        // Read herald.ingest back from the beginning.
        let read = try await readTopic(HeraldTopic.ingest.name, bootstrap: cluster.bootstrapServers, logger: quietLogger) {
            $0.count >= 2
        }
        let update = try #require(read.first { $0.keyString == "demo/paul" })
        let value = try JSONParser.parse(try #require(update.value))
        #expect(value["op"] == .string("profile_update"))
        #expect(value["id"] == .string("e2e-update"))
        #expect(value["source"] == .string("server"))
        #expect(
            String(decoding: try #require(value["profile"]).serialized, as: UTF8.self)
                == #"{"region":"FR","custom_attributes":{"plan.s":"gold"}}"#)
        #expect(value["events"] == .array([.object([JSONMember("name", .string("SIGNED_UP")), JSONMember("attributes", .object([]))])]))
        #expect(update.header("herald-request-id") == Array("e2e-1".utf8))
        #expect(update.header("herald-op") == Array("profile_update".utf8))

        let event = try #require(read.first { $0.keyString == "demo/install/INST-9" })
        let eventValue = try JSONParser.parse(try #require(event.value))
        #expect(eventValue["op"] == .string("event"))
        #expect(eventValue["id"] == .string("e2e-event"))
        #expect(eventValue["app"] == .string("demo-ios"))
        #expect(eventValue["event"]?["name"] == .string("APP_OPEN"))

        ingest.signal(SIGTERM)
        #expect(try await ingest.waitForExit() == 0)
        await cluster.shutdown()
    }

    /// Issue 34: a trigger for a campaign that does not exist was answered 200, and nothing was sent.
    @Test("the trigger API follows herald.config: 404 for a campaign not published yet, 200 once herald config apply published it")
    func triggerFollowsConfiguration() async throws {
        let (cluster, ingest, port) = try await startIngest()
        let trigger = #"{"campaign_id":"login-code","recipients":[{"custom_id":"paul","trigger_properties":{"code":"1234"}}]}"#
        let rest = ["Authorization": "Bearer rest_demo_0123456789abcdef"]
        let (before, beforeBody) = try await httpPost("http://127.0.0.1:\(port)/v1/campaigns/trigger", headers: rest, body: trigger)
        #expect(before == 404 && beforeBody.contains(#""code":"unknown_campaign""#), "\(beforeBody)")
        let (applied, plan) = try await runCommand(
            binDirectory.appendingPathComponent("herald").path,
            ["config", "apply", repositoryFile("config/example"), "--bootstrap", cluster.bootstrapServers])
        #expect(applied == 0, "\(plan)")
        // The running ingest reads the change live: the same call is accepted once it has.
        try await waitUntil("the trigger accepted") {
            try await httpPost("http://127.0.0.1:\(port)/v1/campaigns/trigger", headers: rest, body: trigger).0 == 200
        }
        // An event-triggered campaign of the same configuration is not the API's to trigger.
        let (other, otherBody) = try await httpPost(
            "http://127.0.0.1:\(port)/v1/campaigns/trigger", headers: rest,
            body: #"{"campaign_id":"abandoned-cart","recipients":[{"custom_id":"paul"}]}"#)
        #expect(other == 422 && otherBody.contains("not_api_triggered"), "\(otherBody)")
        let records = try await readTopic(HeraldTopic.ingest.name, bootstrap: cluster.bootstrapServers, logger: quietLogger) {
            !$0.isEmpty
        }
        #expect(records.count == 1 && records.first?.keyString == "demo/paul")

        ingest.signal(SIGTERM)
        #expect(try await ingest.waitForExit() == 0)
        await cluster.shutdown()
    }

    @Test("with the broker down, a write gets 503 and Retry-After, not a 2xx")
    func brokerDown() async throws {
        let (cluster, ingest, port) = try await startIngest(environment: ["HERALD_PRODUCE_TIMEOUT_MS": "1500"])
        for id in cluster.brokerIDs { try cluster.setBrokerDown(id) }

        var request = URLRequest(url: URL(string: "http://127.0.0.1:\(port)/v1/app/opt-out")!)
        request.httpMethod = "POST"
        request.setValue("live_demo_ios_0123456789", forHTTPHeaderField: "X-Api-Key")
        request.httpBody = Data(#"{"installation_id":"INST-1"}"#.utf8)
        let (data, response) = try await URLSession.shared.data(for: request)
        let http = try #require(response as? HTTPURLResponse)
        #expect(http.statusCode == 503, "\(String(decoding: data, as: UTF8.self))")
        #expect(http.value(forHTTPHeaderField: "Retry-After") == "5")

        ingest.signal(SIGTERM)
        #expect(try await ingest.waitForExit() == 0)
        await cluster.shutdown()
    }
}
