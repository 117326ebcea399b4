import Foundation
import HeraldTestSupport
import Logging
import ProviderSimulators
import ServiceLifecycle
import Shared
import Testing

/// Webhooks through a notifier process (issue 61, item 1): one endpoint that hangs never delays another, and a SIGKILL
/// in the middle sends nothing that was answered again.
@Suite("Webhooks end to end", .timeLimit(.minutes(5)))
struct WebhookEndToEndTests {
    @Test("an endpoint that hangs holds only its own lanes: every call to the other is answered meanwhile; after a SIGKILL, what was answered is not sent again and the held ones are all made, with their ids")
    func slowEndpointIsolated() async throws {
        let cluster = try EmbeddedKafkaCluster(brokers: 1, logger: quietLogger)
        try cluster.createTopics(HeraldTopic.specs(partitions: 4))
        let work = FileManager.default.temporaryDirectory.appendingPathComponent("herald-webhook-e2e-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: work, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: work) }
        let (simulators, apns) = try await startAPNsSimulator(work: work)
        let port = Locked<Int?>(nil)
        let http = HTTPSimulators.application(state: simulators) { bound in port.withLock { $0 = bound } }
        let group = ServiceGroup(configuration: .init(services: [.init(service: http)], logger: quietLogger))
        Task { try? await group.run() }
        try await waitUntil("the HTTP simulators") { port.withLock { $0 } != nil }
        let httpPort = port.withLock { $0 }!

        // The sample's projects, with two endpoints of the receiver on loopback.
        let secret = "whsec_" + Data((0..<32).map { UInt8($0 * 7 % 256) }).base64EncodedString()
        simulators.webhookSecrets = [secret]
        var apps = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: sampleAppsFile))) as! [String: Any]
        var projects = apps["projects"] as! [[String: Any]]
        projects[0]["webhooks"] = ["slow", "fast"].map { ["endpoint": $0, "secrets": [secret], "private_network": true] }
        apps["projects"] = projects
        let appsFile = work + "/apps.json"
        try JSONSerialization.data(withJSONObject: apps).write(to: URL(fileURLWithPath: appsFile))
        let environment = [
            "HERALD_APPS_FILE": appsFile, "HERALD_ALLOW_PLAIN_HTTP": "true", "HERALD_WEBHOOK_MAX_IN_FLIGHT": "12",
            "HERALD_WEBHOOK_MAX_IN_FLIGHT_PER_ENDPOINT": "4",
            // Longer than the fast phase can take on a loaded machine: a held call that times out is tried again and
            // held too (6 held once, with 30 s), and the count of held calls no longer says what the lanes allow.
            "HERALD_WEBHOOK_TIMEOUT_SECONDS": "90",
            "HERALD_WEBHOOK_RETRY_BASE_MS": "50", "HERALD_WEBHOOK_RETRY_MAX_MS": "500",
        ]
        var notifier = try startNotifierProcess(cluster, data: work + "/notifier", work: work, apnsURL: apns.url, extra: environment)

        // `slow` answers nothing until released; 12 calls to it (as many as the channel has in flight), then 40 to `fast`,
        // for profiles on every partition.
        simulators.setFault("webhook-slow", .init(status: 0, held: true))
        let producer = try KafkaProducer(
            configuration: KafkaProducerConfiguration(client: KafkaClientSettings(bootstrapServers: cluster.bootstrapServers), clientID: "test"),
            logger: quietLogger)
        func send(_ endpoint: String, _ n: Int) throws -> KafkaOutgoingRecord {
            let key = "demo/user-\(n)"
            var request = SendRequest(
                sendID: "\(endpoint)-\(n)", project: "demo", profileKey: key, customID: "user-\(n)", channel: .webhook, marketing: false,
                app: nil, campaign: "orders", step: "message-0", occurrence: "o-\(n)", template: "t", language: "default",
                content: [
                    "url": "http://127.0.0.1:\(httpPort)/hooks/\(endpoint)/\(n)", "method": "POST", "content_type": "application/json",
                    "body": #"{"n":\#(n)}"#,
                ],
                payload: nil, trigger: .init(type: .event, eventID: "e-\(n)", at: Date()), decidedAt: Date(), expiresAt: nil)
            request.endpoint = endpoint
            return KafkaOutgoingRecord(topic: HeraldTopic.sendsWebhook.name, key: Array(key.utf8), value: try Wire.encode(request))
        }
        _ = try await producer.send(try (0..<12).map { try send("slow", $0) })
        try await waitUntil("the slow endpoint's lanes to fill") { simulators.heldCount >= 4 }
        _ = try await producer.send(try (0..<40).map { try send("fast", $0) })
        try await waitUntil("every call to the fast endpoint answered", timeout: .seconds(60)) {
            Set(simulators.received("webhook-fast").filter { $0.status == 200 }.map(\.target)).count == 40
        }
        // Meanwhile the slow endpoint held its lanes and no more: 4 per endpoint.
        #expect(simulators.heldCount == 4, "\(simulators.heldCount) calls held")
        #expect(simulators.received("webhook-slow").isEmpty)
        // Every fast call's report is written before the kill (its ledger row is `sent`).
        _ = try await readTopic(HeraldTopic.deliveries.name, bootstrap: cluster.bootstrapServers, logger: quietLogger) { records in
            records.compactMap { $0.value.flatMap { try? Wire.decode(DeliveryReport.self, from: $0) } }
                .filter { $0.outcome == .sent && $0.sendID?.hasPrefix("fast-") == true }.count == 40
        }

        notifier.signal(SIGKILL)
        _ = try await notifier.waitForExit()
        // The receiver answers the calls the dead process left; the new one makes them again once their answers can
        // no longer come (at least once, with the same webhook-id: the receiver dedupes by it).
        simulators.setFault("webhook-slow", nil)
        simulators.releaseHeld()
        // At least the 4 held: under a loaded run a held call can outlast the 30 s timeout before the kill, and its retry
        // is held too (then `== 4` never held and this waited out its 120 s).
        try await waitUntil("the receiver to answer the calls of the dead process") { simulators.received("webhook-slow").count >= 4 }
        let restarted = Date()
        notifier = try startNotifierProcess(cluster, data: work + "/notifier", work: work, apnsURL: apns.url, extra: environment)
        // The 8 never made, and the 4 in doubt (once their answer can no longer come: the timeout and a margin).
        try await waitUntil("every call to the slow endpoint made by the new process", timeout: .seconds(240)) {
            Set(simulators.received("webhook-slow").filter { $0.status == 200 && $0.at > restarted }.map(\.target)).count == 12
        }
        let fast = simulators.received("webhook-fast")
        #expect(fast.count == 40, "a call answered before the kill was made again: \(fast.count)")
        for call in simulators.received("webhook-slow") {
            let n = call.target.split(separator: "/").last.map(String.init) ?? ""
            #expect(call.headers["webhook-id"] == "msg_slow-\(n)" && call.status == 200)
        }
        notifier.signal(SIGTERM)
        _ = try await notifier.waitForExit()
        await producer.shutdown()
        await group.triggerGracefulShutdown()
        await apns.stop()
        await cluster.shutdown()
    }
}
