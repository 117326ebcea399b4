import Foundation
import HeraldTestSupport
import Shared
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// An app syncing its in-app messages from the orchestrator process, with config/example applied (issue 35, item 3).
@Suite("In-app messages end to end", .timeLimit(.minutes(5)))
struct InAppEndToEndTests {
    @Test("an identified app syncs its messages rendered for its user; impressions on its devices end them; the auth matrix")
    func sync() async throws {
        let (cluster, ingest, ingestPort) = try await startIngest(config: repositoryFile("config/example"))
        let data = FileManager.default.temporaryDirectory.appendingPathComponent("herald-orch-e2e-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: data) }
        // The test waits by asking again every 50 ms, faster than an installation may sync (10 a second): the limits
        // are off here, so that each wait ends on its condition, never on a 429 (AppReadLimitTests holds the limits).
        let unlimited = ["HERALD_RATE_LIMIT_PER_INSTALLATION": "0", "HERALD_RATE_LIMIT_PER_ADDRESS": "0"]
        let (orchestrator, port) = try await OrchestratorEndToEndTests.start(
            cluster, data: data, environment: sampleApps.merging(unlimited) { $1 })
        let ingestURL = "http://127.0.0.1:\(ingestPort)"
        let paul = signedAppHeaders("paul")
        let (identified, body) = try await httpPost(
            "\(ingestURL)/v1/app/identify", headers: paul, body: #"{"installation_id":"I-1","custom_id":"paul"}"#)
        #expect(identified == 200, "\(body)")
        _ = try await httpPost(
            "\(ingestURL)/v1/profiles/update", headers: ["Authorization": "Bearer rest_demo_0123456789abcdef"],
            body: #"[{"identifiers":{"custom_id":"paul"},"attributes":{"first_name":"Paul"}}]"#)
        let url = "http://127.0.0.1:\(port)/v1/app/in-app-messages?installation_id=I-1&custom_id=paul"
        let latest = Locked((0, ""))
        try await waitUntil("paul's messages, with his name") {
            let answer = try await httpGet(url, headers: paul)
            latest.withLock { $0 = answer }
            return answer.0 == 200 && answer.1.contains("Paul, skis are 20% off")
        }
        let json = try JSONParser.parse(Array(latest.withLock { $0.1 }.utf8))
        #expect(json["profile"]?["custom_id"] == .string("paul"))
        func message(_ id: String) -> JSONValue? {
            guard case .array(let items)? = json["messages"] else { return nil }
            return items.first { $0["id"] == .string(id) }
        }
        // Highest priority first (braze-rules 22): the server-event message (90), the sale (80).
        #expect(json["messages"]?[0]?["id"] == .string("order-shipped") && json["messages"]?[1]?["id"] == .string("ski-sale"))
        #expect(message("ski-sale")?["buttons"]?[0]?["action"]?["uri"] == .string("demo://sale"))
        #expect(message("ski-sale")?["triggers"]?[1]?["campaign"] == .string("order-confirmed"))
        // The server-event pattern (braze-rules §5.7): the in-app half waits for the app's IAM_TRIGGER ...
        let shipped = try #require(message("order-shipped"))
        #expect(shipped["triggers"]?[0]?["event"] == .string("IAM_TRIGGER"))
        #expect(shipped["triggers"]?[0]?["where"] == .string(#"event.campaign_name = "order-shipped""#))
        // ... which the app logs on the silent push a server's event sends.
        let (shippedStatus, _) = try await httpPost(
            "\(ingestURL)/v1/profiles/update", headers: ["Authorization": "Bearer rest_demo_0123456789abcdef"],
            body: #"[{"identifiers":{"custom_id":"paul"},"events":[{"name":"order_shipped"}]}]"#)
        #expect(shippedStatus == 200)
        let sends = try await readTopic(HeraldTopic.sendsPush.name, bootstrap: cluster.bootstrapServers, logger: quietLogger) { records in
            records.contains { (try? Wire.decode(SendRequest.self, from: $0.value ?? []))?.campaign == "order-shipped-signal" }
        }
        let signal = try #require(sends.compactMap { try? Wire.decode(SendRequest.self, from: $0.value ?? []) }.first { $0.campaign == "order-shipped-signal" })
        #expect(signal.payload?["IS_SERVER_EVENT"] == .bool(true) && signal.payload?["CAMPAIGN_NAME"] == .string("order-shipped"))
        #expect(signal.content["push_type"] == "background")
        // The same campaign puts a card into paul's feed (item 5): a whole first sync, then only what changed.
        let cards = "http://127.0.0.1:\(port)/v1/app/content-cards?installation_id=I-1&custom_id=paul"
        try await waitUntil("the order card in paul's feed") {
            let answer = try await httpGet(cards, headers: paul)
            latest.withLock { $0 = answer }
            return answer.0 == 200 && answer.1.contains("Paul, your parcel is on its way.")
        }
        let feed = try JSONParser.parse(Array(latest.withLock { $0.1 }.utf8))
        let card = try #require(feed["cards"]?[0])
        let cardID = try #require(card["id"]?.stringValue)
        #expect(feed["full"] == .bool(true) && card["url"] == .string("https://shop.example/orders") && card["domain"] == .string("shop.example"))
        let cursor = try #require(feed["cursor"]?.stringValue)
        #expect(try await httpGet("\(cards)&since=\(cursor)", headers: paul).1 == #"{"cursor":"\#(cursor)","full":false,"cards":[],"removed":[]}"#)
        #expect(try await httpGet("\(cards)&since=nope", headers: paul).0 == 400)
        let (dismissed, dismissal) = try await httpPost(
            "\(ingestURL)/v1/app/activity", headers: paul,
            body: #"{"installation_id":"I-1","custom_id":"paul","activity":[{"type":"card_view","card_id":"\#(cardID)","time":"2026-11-27T09:00:00Z"},{"type":"card_dismiss","card_id":"\#(cardID)","time":"2026-11-27T09:00:05Z"}]}"#)
        #expect(dismissed == 200, "\(dismissal)")
        let dismissID = try #require(JSONParser.parse(Array(dismissal.utf8))["ids"]?[1]?.stringValue)
        try await waitUntil("the dismissal applied") {
            let answer = try await httpGet(
                "\(cards)&since=\(cursor)&after=\(dismissID.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? dismissID)", headers: paul)
            latest.withLock { $0 = answer }
            return answer.0 == 200
        }
        #expect(try JSONParser.parse(Array(latest.withLock { $0.1 }.utf8))["removed"] == .array([.string(cardID)]))

        // Who may read: the app's key, and the user's proof when it names one.
        let key = ["X-Api-Key": "live_demo_ios_0123456789"]
        #expect(try await httpGet(url, headers: key).0 == 401)
        #expect(try await httpGet(url, headers: ["X-Api-Key": "rest_demo_0123456789abcdef"]).0 == 403)
        #expect(try await httpGet(url, headers: key.merging(["X-CustomID-Auth": "00"]) { $1 }).0 == 401)
        #expect(try await httpGet(url, headers: signedAppHeaders("zoe")).0 == 401)
        // Anonymous, or as another user: not this installation's profile now.
        #expect(try await httpGet("http://127.0.0.1:\(port)/v1/app/in-app-messages?installation_id=I-1", headers: key).0 == 409)
        #expect(try await httpGet("http://127.0.0.1:\(port)/v1/app/in-app-messages?installation_id=I-1&custom_id=zoe", headers: signedAppHeaders("zoe")).0 == 409)
        #expect(try await httpGet("http://127.0.0.1:\(port)/v1/app/in-app-messages", headers: key).0 == 400)

        // Three impressions, on two of paul's devices: the sale is over for him (3 a year); the answer after the
        // last report reflects it.
        for (installation, minute) in [("I-1", 1), ("I-2", 2), ("I-1", 3)] {
            let (status, reported) = try await httpPost(
                "\(ingestURL)/v1/app/activity", headers: paul,
                body: #"{"installation_id":"\#(installation)","custom_id":"paul","activity":[{"type":"in_app_impression","message_id":"ski-sale","time":"2026-11-27T09:0\#(minute):00Z"}]}"#)
            #expect(status == 200, "\(reported)")
            if minute == 3 {
                let id = try #require(JSONParser.parse(Array(reported.utf8))["ids"]?[0]?.stringValue)
                let after = "\(url)&after=\(id.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? id)"
                try await waitUntil("the last impression applied") {
                    let answer = try await httpGet(after, headers: paul)
                    latest.withLock { $0 = answer }
                    return answer.0 == 200
                }
            }
        }
        let last = latest.withLock { $0.1 }
        #expect(!last.contains("ski-sale"), "\(last)")
        // Nothing changed since: 304 with the tag.
        let (_, headers, _) = try await httpGetHeaders(url, headers: paul)
        let tag = try #require(headers["Etag"] ?? headers["ETag"])
        #expect(try await httpGet(url, headers: paul.merging(["If-None-Match": tag]) { $1 }).0 == 304)
        // A change the answer reads (paul's language) reaches an app revalidating with that tag: the tag the partition
        // kept went with the write's commit (docs/in-app.md, "Kept tags"), and the sync reads again.
        let (languageSet, languageBody) = try await httpPost(
            "\(ingestURL)/v1/profiles/update", headers: ["Authorization": "Bearer rest_demo_0123456789abcdef"],
            body: #"[{"identifiers":{"custom_id":"paul"},"attributes":{"$language":"fr"}}]"#)
        #expect(languageSet == 200, "\(languageBody)")
        try await waitUntil("the revalidation answered anew") {
            try await httpGet(url, headers: paul.merging(["If-None-Match": tag]) { $1 }).0 == 200
        }

        orchestrator.signal(SIGTERM)
        #expect(try await orchestrator.waitForExit() == 0)
        ingest.signal(SIGTERM)
        _ = try await ingest.waitForExit()
        await cluster.shutdown()
    }
}

extension InAppEndToEndTests {
    /// Item 6: two orchestrators share the partitions; a sync reaching either is answered by the partition's owner (the
    /// other forwards it), and after one leaves, the one left answers them all.
    @Test("two orchestrators: a sync reaching the instance that does not own the profile's partition gets the owner's answer, through a rebalance")
    func routedToOwner() async throws {
        let (cluster, ingest, ingestPort) = try await startIngest(config: repositoryFile("config/example"))
        var processes: [(ChildProcess, Int)] = []
        var directories: [String] = []
        for name in ["a", "b"] {
            let data = FileManager.default.temporaryDirectory.appendingPathComponent("herald-orch-e2e-\(UUID().uuidString)").path
            directories.append(data)
            processes.append(
                try await OrchestratorEndToEndTests.start(
                    cluster, data: data, environment: sampleApps.merging(["HERALD_INSTANCE_ID": "orchestrator-\(name)"]) { $1 }))
        }
        defer { for directory in directories { try? FileManager.default.removeItem(atPath: directory) } }
        let (portA, portB) = (processes[0].1, processes[1].1)
        let users = (0..<8).map { "user-\($0)" }
        for (index, user) in users.enumerated() {
            let (status, body) = try await httpPost(
                "http://127.0.0.1:\(ingestPort)/v1/app/identify", headers: signedAppHeaders(user),
                body: #"{"installation_id":"I-\#(index)","custom_id":"\#(user)"}"#)
            #expect(status == 200, "\(body)")
        }
        @Sendable func sync(_ port: Int, _ index: Int) async throws -> (Int, String) {
            try await httpGet(
                "http://127.0.0.1:\(port)/v1/app/in-app-messages?installation_id=I-\(index)&custom_id=\(users[index])",
                headers: signedAppHeaders(users[index]))
        }
        // Both instances answer every user, the same messages (each owns some of the 4 partitions).
        try await waitUntil("every sync answered by both instances", timeout: .seconds(60)) {
            for index in users.indices {
                let (a, b) = (try await sync(portA, index), try await sync(portB, index))
                // The same messages for the same profile (each answer's `valid_until` is its own time's).
                let messages = { (body: String) in (try? JSONParser.parse(Array(body.utf8)))?["messages"] }
                guard a.0 == 200, b.0 == 200, messages(a.1) != nil, messages(a.1) == messages(b.1) else { return false }
            }
            return true
        }
        let partitions = Set(users.map { KeyPartitioner.partition(of: "demo/\($0)", partitions: 4) })
        #expect(partitions.count > 1, "the users span partitions")
        let owned = try await readTopic(HeraldTopic.owners.name, bootstrap: cluster.bootstrapServers, logger: quietLogger) { records in
            Set(records.compactMap { try? Wire.decode(OwnerAnnouncement.self, from: $0.value ?? []) }.map(\.instance)).count == 2
        }.compactMap { try? Wire.decode(OwnerAnnouncement.self, from: $0.value ?? []) }
        #expect(Set(owned.map(\.instance)) == ["orchestrator-a", "orchestrator-b"])

        // B leaves: A takes its partitions (restored from the changelog) and answers every sync itself.
        processes[1].0.signal(SIGTERM)
        #expect(try await processes[1].0.waitForExit() == 0)
        try await waitUntil("every sync answered by the instance left", timeout: .seconds(60)) {
            for index in users.indices where try await sync(portA, index).0 != 200 { return false }
            return true
        }
        processes[0].0.signal(SIGTERM)
        #expect(try await processes[0].0.waitForExit() == 0)
        ingest.signal(SIGTERM)
        _ = try await ingest.waitForExit()
        await cluster.shutdown()
    }
}

/// A GET on loopback: status, headers and body.
func httpGetHeaders(_ url: String, headers: [String: String] = [:]) async throws -> (Int, [String: String], String) {
    var request = URLRequest(url: URL(string: url)!)
    for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
    let (data, response) = try await URLSession.shared.data(for: request)
    let http = response as? HTTPURLResponse
    var fields: [String: String] = [:]
    for (name, value) in http?.allHeaderFields ?? [:] { fields["\(name)"] = "\(value)" }
    return (http?.statusCode ?? 0, fields, String(decoding: data, as: UTF8.self))
}
