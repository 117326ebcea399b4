import Crypto
import Foundation
import HeraldTestSupport
import ProviderSimulators
import ServiceSupport
import Shared
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

@Suite("Delivery end to end", .timeLimit(.minutes(5)))
struct NotifierEndToEndTests {
    @Test("an event over HTTP → campaign → the notifier process pushes it to APNs over TLS, reports it, and the inbox serves it")
    func eventToDevice() async throws {
        let stack = try await DeliveryStack.start("deliver")
        defer { stack.removeFiles() }
        let (cluster, ingest, ingestPort, work) = (stack.cluster, stack.ingest, stack.ingestPort, stack.work)
        let (orchestrator, orchestratorPort, simulators, apns) = (stack.orchestrator, stack.orchestratorPort, stack.simulators, stack.apns)
        let herald = binDirectory.appendingPathComponent("herald").path
        func startNotifier(data: String) throws -> ChildProcess { try stack.startNotifier(data: data) }
        let notifier = try startNotifier(data: work + "/notifier")
        try await waitUntil("the notifier to listen") { !notifier.logs("http listening").isEmpty || notifier.exitCode != nil }
        let notifierPort = try #require(notifier.logs("http listening").first?["port"] as? Int, "\(notifier.output.suffix(5))")

        // Paul's app: installation, notifications allowed, an APNs token; then the event that triggers the campaign.
        let app = signedAppHeaders("paul")
        let token = String(repeating: "5e", count: 32)
        let writes = [
            ("/v1/profiles/update", ["Authorization": "Bearer rest_demo_0123456789abcdef"],
             #"[{"identifiers":{"custom_id":"paul"},"attributes":{"$language":"fr","first_name":"Paul"}}]"#),
            ("/v1/app/installation", app, #"{"installation_id":"I-1","custom_id":"paul","notification_permission":"allowed"}"#),
            ("/v1/app/push-token", app, #"{"installation_id":"I-1","custom_id":"paul","token":"\#(token)","environment":"production"}"#),
        ]
        for (path, headers, body) in writes {
            let (status, answer) = try await httpPost("http://127.0.0.1:\(ingestPort)\(path)", headers: headers, body: body)
            #expect(status == 200, "\(path): \(answer)")
        }
        // The contact snapshot reaches the notifier before the event's send does (same partition, earlier offsets).
        _ = try await readTopic(HeraldTopic.contacts.name, bootstrap: cluster.bootstrapServers, logger: quietLogger) { contacts in
            contacts.contains { $0.value.map { String(decoding: $0, as: UTF8.self).contains(token) } ?? false }
        }
        let (posted, postBody) = try await httpPost(
            "http://127.0.0.1:\(ingestPort)/v1/app/events", headers: app,
            body: #"{"installation_id":"I-1","custom_id":"paul","events":[{"name":"add_to_cart","id":"cart-1","attributes":{"product":"Skis","price":300}}]}"#)
        #expect(posted == 200, "\(postBody)")

        try await waitUntil("APNs to receive the push") { simulators.count("apns") > 0 }
        let push = try #require(simulators.received("apns").first)
        #expect(push.target == token && push.status == 200)
        #expect(push.headers["apns-topic"] == "com.example.demo" && push.headers["apns-push-type"] == "alert")
        #expect(push.body.contains(#""title":"Votre panier""#) && push.body.contains("Bonjour Paul, Skis vous attend"))

        let reports = try await readTopic(HeraldTopic.deliveries.name, bootstrap: cluster.bootstrapServers, logger: quietLogger) {
            !$0.isEmpty
        }
        let report = try Wire.decode(DeliveryReport.self, from: try #require(reports.first?.value))
        #expect(report.outcome == .sent && report.campaign == "cart-now" && report.installationID == "I-1")
        #expect(report.provider == "apns" && report.profileKey == "demo/paul" && report.token == token)

        let proof = HMAC<SHA256>.authenticationCode(
            for: Array("live_demo_ios_0123456789paul".utf8), using: SymmetricKey(data: Array("inbox_secret_demo_ios".utf8))
        ).map { String(format: "%02x", $0) }.joined()
        let (status, inbox) = try await httpGet(
            "http://127.0.0.1:\(notifierPort)/v1/inbox/custom/paul", headers: app.merging(["X-CustomID-Auth": proof]) { $1 })
        #expect(status == 200, "\(inbox)")
        #expect(inbox.contains(#""title":"Votre panier""#) && inbox.contains(#""installId":"I-1""#), "\(inbox)")

        // One correlation id from the HTTP request to the provider call: the ingest's request log and the notifier's
        // delivery line carry the same request_id.
        let eventRequest = try #require(ingest.logs("request").last { ($0["route"] as? String) == "/v1/app/events" })
        let requestID = try #require(eventRequest["request_id"] as? String)
        try await waitUntil("the delivery log line") { !notifier.logs("delivery").isEmpty }
        let delivery = try #require(notifier.logs("delivery").first)
        #expect(delivery["request_id"] as? String == requestID, "\(delivery)")
        let decided = try #require(orchestrator.logs("send decided").first)
        #expect(decided["request_id"] as? String == requestID && decided["send_id"] as? String == report.sendID, "\(decided)")
        #expect(delivery["outcome"] as? String == "accepted" && delivery["provider"] as? String == "apns")
        #expect(delivery["send_id"] as? String == report.sendID && delivery["event_id"] as? String == "cart-1")

        // The operator's view: lag and batch sizes per consumer, and the ingest-to-provider latency per campaign.
        let (_, metrics) = try await httpGet("http://127.0.0.1:\(notifierPort)/metrics")
        #expect(metrics.contains(#"herald_consumer_lag{partition="#) || metrics.contains(#"herald_consumer_lag{topic="#), "\(metrics)")
        #expect(metrics.contains("herald_consumer_batch_records"))
        #expect(metrics.contains(#"campaign="demo/cart-now""#) && metrics.contains("herald_delivery_latency_seconds"))
        #expect(metrics.contains("herald_deliveries_total"))

        // The orchestrator's configuration reader has no committing group: its lag is a gauge.
        let (_, orchestratorMetrics) = try await httpGet("http://127.0.0.1:\(orchestratorPort)/metrics")
        let configLag = MetricsText(orchestratorMetrics).samples("herald_consumer_lag", ["topic": "herald.config", "partition": "0"])
        #expect(configLag.map(\.value) == [0], "\(orchestratorMetrics)")
        // After a write went through the three services, each /metrics still follows Prometheus' conventions (promtool)
        // and holds every family of its catalog.
        let (_, ingestMetrics) = try await httpGet("http://127.0.0.1:\(ingestPort)/metrics")
        for (service, exposition) in [(MetricCatalog.Service.ingest, ingestMetrics), (.orchestrator, orchestratorMetrics), (.notifier, metrics)] {
            #expect(try await metricsProblems(exposition, service: service, atStart: false) == [], "\(service): \(exposition)")
        }

        // Paul opens the push: the app reports it, the campaign's figures count it. An open counts only for a push the
        // orchestrator knows was delivered: its report read first (another topic than the open's).
        try await waitUntil("the orchestrator to read the delivery report") {
            let (_, exposition) = try await httpGet("http://127.0.0.1:\(orchestratorPort)/metrics")
            return MetricsText(exposition).sum("herald_records_consumed_total", ["topic": HeraldTopic.deliveries.name]) >= 1
        }
        let sendID = try #require(report.sendID)
        let (opened, openAnswer) = try await httpPost(
            "http://127.0.0.1:\(ingestPort)/v1/app/activity", headers: app,
            body: #"{"installation_id":"I-1","custom_id":"paul","activity":[{"type":"push_open","send_id":"\#(sendID)","time":"\#(WireTime.format(Date()))"}]}"#)
        #expect(opened == 200, "\(openAnswer)")
        try await waitUntil("the open counted") {
            let (_, exposition) = try await httpGet("http://127.0.0.1:\(orchestratorPort)/metrics")
            return MetricsText(exposition).sum("herald_campaign_engagements_total", ["campaign": "demo/cart-now", "action": "opened"]) == 1
        }

        // The one-screen view: the write accepted, the campaign decided once, delivered once and opened once (no click,
        // no conversion), push sent once.
        let (statusCode, board) = try await runCommand(
            herald,
            ["status", "--ingest", "http://127.0.0.1:\(ingestPort)", "--orchestrator", "http://127.0.0.1:\(orchestratorPort)",
             "--notifier", "http://127.0.0.1:\(notifierPort)"])
        #expect(statusCode == 0, "\(board)")
        let lines = board.split(separator: "\n").map { $0.split(separator: " ").joined(separator: " ") }
        #expect(lines.contains { $0.hasPrefix("INGESTED 5 writes") && $0.contains("event 1") && $0.contains("push_open 1") }, "\(board)")
        // Sent 1, delivered 1, p50 and p99, then opened 1, clicked 0, converted 0.
        #expect(lines.contains { $0.hasPrefix("demo/cart-now 1 1 ") && $0.hasSuffix(" 1 0 0") }, "\(board)")
        #expect(lines.contains("push 1 0 0 0"), "\(board)")
        #expect(lines.contains { $0.hasPrefix("PROCESSED") && $0.hasSuffix("dead letters 0") }, "\(board)")
        let (downCode, down) = try await runCommand(
            herald, ["status", "--ingest", "http://127.0.0.1:1", "--orchestrator", "http://127.0.0.1:1", "--notifier", "http://127.0.0.1:1"])
        #expect(downCode == 1 && down.contains("ingest http://127.0.0.1:1 DOWN"), "\(down)")

        // The partition moves to an instance without its database: it restores the ledger from herald.state.notifier
        // (and would read back reports written after it) before sending, so the push is not delivered again; the next
        // one is.
        notifier.signal(SIGTERM)
        #expect(try await notifier.waitForExit() == 0)
        let successor = try startNotifier(data: work + "/notifier-new")
        try await waitUntil("the partitions restored") {
            !successor.logs("partition restored").isEmpty || successor.exitCode != nil
        }
        #expect(successor.logs("partition restored").contains { Int($0["records"] as? String ?? "") ?? 0 > 0 })
        try await Task.sleep(for: .seconds(1))
        #expect(simulators.count("apns") == 1, "\(successor.output.suffix(10))")
        let (again, againBody) = try await httpPost(
            "http://127.0.0.1:\(ingestPort)/v1/app/events", headers: app,
            body: #"{"installation_id":"I-1","custom_id":"paul","events":[{"name":"add_to_cart","id":"cart-2","attributes":{"product":"Poles","price":40}}]}"#)
        #expect(again == 200, "\(againBody)")
        try await waitUntil("the successor's push") { simulators.count("apns") == 2 }

        for process in [successor, orchestrator, ingest] { process.signal(SIGTERM) }
        #expect(try await successor.waitForExit() == 0)
        _ = try await orchestrator.waitForExit()
        _ = try await ingest.waitForExit()
        await apns.stop()
        await cluster.shutdown()
    }
}

/// The three services on a new cluster with `CampaignEndToEndTests`' configuration applied (its `cart-now` push on
/// `add_to_cart`), the APNs simulator, and the files they use in `work`; the notifier is started by the test
/// (`startNotifier`), which may start another later.
struct DeliveryStack {
    let cluster: EmbeddedKafkaCluster
    let ingest: ChildProcess
    let ingestPort: Int
    let orchestrator: ChildProcess
    let orchestratorPort: Int
    let simulators: SimulatorState
    let apns: APNsSimulator
    /// The test's directory (data directories, keys), and the configuration's.
    let work: String
    let configDirectory: String

    static func start(_ name: String) async throws -> DeliveryStack {
        let (cluster, ingest, ingestPort) = try await startIngest()
        let directory = try CampaignEndToEndTests.configDirectory()
        let work = FileManager.default.temporaryDirectory.appendingPathComponent("herald-\(name)-e2e-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: work, withIntermediateDirectories: true)
        let herald = binDirectory.appendingPathComponent("herald").path
        let (applied, plan) = try await runCommand(herald, ["config", "apply", directory, "--bootstrap", cluster.bootstrapServers])
        #expect(applied == 0, "\(plan)")
        let (orchestrator, orchestratorPort) = try await OrchestratorEndToEndTests.start(cluster, data: work + "/orchestrator")
        let (simulators, apns) = try await startAPNsSimulator(work: work)
        return DeliveryStack(
            cluster: cluster, ingest: ingest, ingestPort: ingestPort, orchestrator: orchestrator, orchestratorPort: orchestratorPort,
            simulators: simulators, apns: apns, work: work, configDirectory: directory)
    }

    func startNotifier(data: String) throws -> ChildProcess {
        try startNotifierProcess(cluster, data: data, work: work, apnsURL: apns.url)
    }

    func removeFiles() {
        try? FileManager.default.removeItem(atPath: configDirectory)
        try? FileManager.default.removeItem(atPath: work)
    }
}

/// The APNs simulator over TLS with its own certificate (written to `work/ca.pem`), and a .p8 key for the notifier to
/// sign with (`work/apns.p8`).
func startAPNsSimulator(work: String) async throws -> (SimulatorState, APNsSimulator) {
    let simulators = SimulatorState()
    let tls = try await SimulatorTLS.selfSigned(openssl: testOpenSSL)
    try tls.writeCertificate(to: work + "/ca.pem")
    let apns = try await APNsSimulator.start(state: simulators, tls: tls)
    try P256.Signing.PrivateKey().pemRepresentation.write(toFile: work + "/apns.p8", atomically: true, encoding: .utf8)
    return (simulators, apns)
}

/// A notifier process on the cluster, pushing to the APNs simulator `startAPNsSimulator` started in `work`.
func startNotifierProcess(
    _ cluster: EmbeddedKafkaCluster, data: String, work: String, apnsURL: String, extra: [String: String] = [:]
) throws -> ChildProcess {
    try ChildProcess(
        "herald-notifier",
        environment: [
            "KAFKA_BOOTSTRAP_SERVERS": cluster.bootstrapServers, "HERALD_HTTP_HOST": "127.0.0.1", "HERALD_HTTP_PORT": "0",
            "HERALD_TOPIC_PARTITIONS": "4", "HERALD_DATA_DIR": data, "HERALD_SESSION_TIMEOUT_MS": "3000",
            "HERALD_APNS_KEY_FILE": work + "/apns.p8", "HERALD_APNS_KEY_ID": "KEY1234567",
            "HERALD_APNS_TEAM_ID": "TEAM123456", "HERALD_APNS_URL": apnsURL, "HERALD_APNS_SANDBOX_URL": apnsURL,
            "HERALD_PROVIDER_CA_FILE": work + "/ca.pem",
        ].merging(sampleApps) { $1 }.merging(extra) { $1 })
}
