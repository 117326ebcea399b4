import Foundation
import HeraldTestSupport
import ProviderSimulators
import Shared
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// `POST /v1/sends/push` through the three processes to the APNs simulator (issue 22, item 5): to an identified
/// installation (its token is the orchestrator's, the send goes where the installation is) and to a raw token.
@Suite("Transactional push end to end", .timeLimit(.minutes(5)))
struct TransactionalPushEndToEndTests {
    @Test("an installation's push and a raw token's reach APNs; badges count per installation; a retried call is one push")
    func sendsReachDevices() async throws {
        let (cluster, ingest, ingestPort) = try await startIngest()
        let work = FileManager.default.temporaryDirectory.appendingPathComponent("herald-tx-e2e-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: work, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: work) }
        let (orchestrator, _) = try await OrchestratorEndToEndTests.start(cluster, data: work + "/orchestrator")
        let (simulators, apns) = try await startAPNsSimulator(work: work)
        let notifier = try startNotifierProcess(cluster, data: work + "/notifier", work: work, apnsURL: apns.url)

        let app = signedAppHeaders("paul")
        let rest = ["Authorization": "Bearer rest_demo_0123456789abcdef"]
        let token = String(repeating: "7c", count: 32)
        for (path, body) in [
            ("/v1/app/installation", #"{"installation_id":"I-1","custom_id":"paul","notification_permission":"allowed"}"#),
            ("/v1/app/push-token", #"{"installation_id":"I-1","custom_id":"paul","token":"\#(token)","environment":"production"}"#),
        ] {
            let (status, answer) = try await httpPost("http://127.0.0.1:\(ingestPort)\(path)", headers: app, body: body)
            #expect(status == 200, "\(path): \(answer)")
        }
        _ = try await readTopic(HeraldTopic.contacts.name, bootstrap: cluster.bootstrapServers, logger: quietLogger) { contacts in
            contacts.contains { $0.value.map { String(decoding: $0, as: UTF8.self).contains(token) } ?? false }
        }
        let send = #"{"installation_id":"I-1","id":"order-42","campaign":"shipping","notification":{"title":"Shipped","body":"Thursday","badge":"+1"},"payload":{"order":42}}"#
        for body in [send, send, #"{"installation_id":"I-1","id":"order-43","notification":{"body":"Delivered","badge":"+1"}}"#] {
            let (status, answer) = try await httpPost("http://127.0.0.1:\(ingestPort)/v1/sends/push", headers: rest, body: body)
            #expect(status == 200, "\(answer)")
        }
        let raw = String(repeating: "9d", count: 32)
        let (rawStatus, rawAnswer) = try await httpPost(
            "http://127.0.0.1:\(ingestPort)/v1/sends/push", headers: rest,
            body: #"{"token":"\#(raw)","app":"demo-ios","environment":"sandbox","notification":{"body":"Your code is 4821"}}"#)
        #expect(rawStatus == 200, "\(rawAnswer)")

        try await waitUntil("APNs to receive the three pushes") { simulators.count("apns") >= 3 }
        let pushes = simulators.received("apns")
        let toInstallation = pushes.filter { $0.target == token }
        #expect(toInstallation.count == 2, "the retried call was sent twice: \(pushes.map(\.body))")
        let bodies = toInstallation.compactMap { try? JSONParser.parse(Array($0.body.utf8)) }
        // The badges were decided in the order the calls came (order-42, then order-43); the two requests may reach
        // APNs in either order (they go out together, over one HTTP/2 connection): each is found by its content.
        let shipped = try #require(bodies.first { $0["order"] == .number("42") })
        let delivered = try #require(bodies.first { $0["aps"]?["alert"]?["body"] == .string("Delivered") })
        #expect(shipped["aps"]?["badge"] == .number("1") && delivered["aps"]?["badge"] == .number("2"))
        #expect(shipped["com.herald"]?["c"] == .string("shipping"))
        #expect(shipped["com.herald"]?["t"] == .string("t"))
        let rawPush = try #require(pushes.first { $0.target == raw })
        #expect(rawPush.status == 200 && rawPush.headers["apns-topic"] == "com.example.demo")
        #expect(rawPush.body.contains("Your code is 4821"))

        for process in [notifier, orchestrator, ingest] { process.signal(SIGTERM) }
        for process in [notifier, orchestrator, ingest] { #expect(try await process.waitForExit() == 0) }
        await cluster.shutdown()
    }
}
