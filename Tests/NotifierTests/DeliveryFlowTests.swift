import Crypto
import CurlClient
import Foundation
import GRDB
import HeraldTestSupport
import Logging
import ProviderSimulators
import ServiceLifecycle
import ServiceSupport
import Shared
import Testing
import _CryptoExtras

@testable import Notifier
@testable import PartitionStore

/// The notifier's parts on an embedded broker, with the real providers talking to the simulators: records are fed to
/// the partitions as the consumer would, workers deliver, reports are read back from `herald.deliveries`.
final class NotifierHarness: @unchecked Sendable {
    let logger = Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })
    let cluster: EmbeddedKafkaCluster
    let producer: KafkaProducer
    private(set) var directory: String
    let caFile: String
    let simulators = SimulatorState()
    let apns: APNsSimulator
    let smtp: SMTPSink
    let httpGroup: ServiceGroup
    let httpPort: Int
    let driver: CurlDriver
    private(set) var partitions: NotifierPartitions
    private var workers: [Task<Void, Never>] = []
    private var offsets: [String: Int64] = [:]
    private var inspector: KafkaGroupInspector?
    /// Reads `herald.deliveries` by assignment (no group to join for each look), and what it has read so far.
    private let deliveriesReader: KafkaPartitionReader
    private let deliveries = Locked<(next: Int64, reports: [DeliveryReport])>((0, []))
    /// Every record fed so far, in order: what a new owner of the partition replays.
    private(set) var history: [(HeraldTopic, String, [UInt8]?)] = []
    let retry: RetryPolicy
    /// Webhooks' policy: tried again for a window, as the notifier's (short here).
    /// Its cap lets a Retry-After of up to 6 s be honoured.
    var webhookRetry = RetryPolicy(maxAttempts: .max, base: .milliseconds(20), cap: .seconds(1), window: .seconds(600))

    static let catalog = try! AppsCatalog.load(path: sampleAppsFile)

    let clock: @Sendable () -> Date

    /// How long a revocation waits for the provider calls in flight.
    let drainTimeout: Duration
    /// What the first owner produces goes through it: its changelog records can be held (`changelog: true`).
    let gate: ChangelogGate
    private let restoreReader: KafkaPartitionReader?

    init(
        retry: RetryPolicy = RetryPolicy(maxAttempts: 3, base: .milliseconds(20), cap: .milliseconds(100)),
        drainTimeout: Duration = .seconds(15), changelog: Bool = false, webhookLanes: Int = 10,
        suppressions: SuppressionList = SuppressionList(), clock: @escaping @Sendable () -> Date = { Date() }
    ) async throws {
        self.retry = retry
        self.drainTimeout = drainTimeout
        self.clock = clock
        cluster = try EmbeddedKafkaCluster(brokers: 1, logger: logger)
        try cluster.createTopics(HeraldTopic.specs(partitions: 1))
        producer = try KafkaProducer(
            configuration: KafkaProducerConfiguration(
                client: KafkaClientSettings(bootstrapServers: cluster.bootstrapServers), clientID: "notifier-test"),
            logger: logger)
        deliveriesReader = try KafkaPartitionReader(
            client: KafkaClientSettings(bootstrapServers: cluster.bootstrapServers), clientID: "test-deliveries",
            groupID: "test-deliveries-\(UUID().uuidString)", logger: logger)
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("herald-notifier-\(UUID().uuidString)").path
        // APNs over TLS, as in production: libcurl multiplexes its streams on one connection.
        let tls = try await SimulatorTLS.selfSigned(openssl: testOpenSSL)
        caFile = directory + ".ca.pem"
        try tls.writeCertificate(to: caFile)
        driver = CurlDriver(caFile: caFile)
        apns = try await APNsSimulator.start(state: simulators, tls: tls)
        smtp = try await SMTPSink.start(state: simulators)
        let port = Locked<Int?>(nil)
        let http = HTTPSimulators.application(state: simulators) { bound in port.withLock { $0 = bound } }
        httpGroup = ServiceGroup(configuration: .init(services: [.init(service: http)], logger: logger))
        let group = httpGroup
        Task { try? await group.run() }
        try await waitUntil("the HTTP simulators") { port.withLock { $0 } != nil }
        httpPort = port.withLock { $0 }!
        gate = ChangelogGate(producer)
        restoreReader = changelog
            ? try KafkaPartitionReader(
                client: KafkaClientSettings(bootstrapServers: cluster.bootstrapServers), clientID: "test-restore",
                groupID: "test-restore-\(UUID().uuidString)", logger: logger)
            : nil
        partitions = NotifierPartitions(
            directory: directory, producer: gate,
            changelog: restoreReader.map { ChangelogSettings(topic: HeraldTopic.stateNotifier.name, source: $0, renamedTables: NotifierSchema.renamedTables) },
            catalog: Self.catalog, logger: logger, drainTimeout: drainTimeout,
            webhookGate: WebhookGate(perEndpoint: webhookLanes, lapse: .seconds(300)), suppressions: suppressions, clock: clock)
        try await open()
    }

    var topicPartitions: [TopicPartition] { Notifier.topics.map { TopicPartition($0.name, 0) } }

    /// The harness's one instance, which runs the one partition: no other to ask.
    var peers: PartitionPeers {
        let owner = partitions.owner
        return PartitionPeers(instance: "test", owner: { _ in nil }, runs: { owner.isRunning($0) })
    }

    private func open() async throws {
        _ = try await partitions.partitionsAssigned(topicPartitions)
    }

    /// A process stop: the partitions are dropped without finishing anything, then opened again by a new owner.
    func restart(attemptsInDoubt: Duration = .zero) async throws {
        await stopWorkers()
        await partitions.partitionsRevoked(topicPartitions, lost: true)
        partitions = NotifierPartitions(
            directory: directory, producer: producer, catalog: Self.catalog, logger: logger, attemptsInDoubt: attemptsInDoubt)
        try await open()
    }

    /// The partition moves to another instance that has not its database: the owner hands it back (its outbox
    /// flushed), the new owner opens an empty directory, knows the broker's watermarks, and will read the topics from
    /// the beginning (`replay`). `revoked`: the old owner was already revoked (with its workers running, as in a live
    /// rebalance).
    func handOver(revoked: Bool = false) async throws {
        await stopWorkers()
        if !revoked { await partitions.partitionsRevoked(topicPartitions, lost: false) }
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("herald-notifier-\(UUID().uuidString)").path
        partitions = NotifierPartitions(directory: directory, producer: producer, catalog: Self.catalog, logger: logger)
        await partitions.onWatermarks { [self] partition in try await watermarks(partition) }
        offsets = [:]
        try await open()
    }

    /// The broker's low and high watermarks of a partition, as the notifier's consumer asks them on assignment (one
    /// inspector, made on first use and shut down with the harness).
    func watermarks(_ partition: TopicPartition) async throws -> (low: Int64, high: Int64) {
        let inspector = try inspector ?? KafkaGroupInspector(
            client: KafkaClientSettings(bootstrapServers: cluster.bootstrapServers), groupID: "handover-test", logger: logger)
        self.inspector = inspector
        return try await inspector.watermarks(partition)
    }

    /// Feeds the history again, from offset 0, as a consumer starting from the beginning would.
    func replay() async throws {
        let records = history
        history = []
        try await feed(records)
    }

    /// The providers' deadline in these tests: a loaded machine's slow answer is not the timeout they would retry
    /// (an attempt counted twice); the deadlines have their own test (`providerDeadlines`).
    static let providerTimeout: Duration = .seconds(60)

    func providers() throws -> [MessageChannel: [String: any DeliveryProvider]] {
        let key = P256.Signing.PrivateKey()
        var apnsSettings = APNsProvider.Settings()
        apnsSettings.productionURL = apns.url
        apnsSettings.sandboxURL = apns.url
        apnsSettings.timeout = Self.providerTimeout
        let apnsProvider = APNsProvider(
            driver: driver, signer: try APNsTokenSigner(p8: key.pemRepresentation, keyID: "KEY1234567", teamID: "TEAM123456"),
            settings: apnsSettings, bundleIDs: ["demo/demo-ios": "com.example.demo"])
        let account = ServiceAccount(
            projectID: "demo-fcm", clientEmail: "herald@demo", privateKeyID: "k1", tokenURI: "http://127.0.0.1:\(httpPort)/token",
            key: Self.rsaKey)
        let fcm = FCMProvider(
            driver: driver, tokens: AccessTokens(account: account, driver: driver), baseURL: "http://127.0.0.1:\(httpPort)",
            maxInFlight: 50, timeout: Self.providerTimeout)
        var smtpSettings = SMTPProvider.Settings(url: smtp.url, from: "Demo <news@example.com>", startTLS: .off)
        smtpSettings.timeout = Self.providerTimeout
        let smtpProvider = SMTPProvider(
            driver: driver, settings: smtpSettings,
            links: UnsubscribeLinks(secret: "0123456789abcdef-secret", publicURL: "http://127.0.0.1:8082"))
        var smsSettings = SMSProvider.Settings(
            url: "http://127.0.0.1:\(httpPort)/2010-04-01/Accounts/AC1/Messages.json", account: "AC1", token: "secret",
            from: "+15550001111")
        smsSettings.timeout = Self.providerTimeout
        let sms = SMSProvider(driver: driver, settings: smsSettings)
        return [
            .push: ["ios": apnsProvider, "android": fcm], .email: ["email": smtpProvider], .sms: ["sms": sms],
            .webhook: ["webhook": webhookProvider()],
        ]
    }

    /// The webhook provider over `catalog`'s endpoints (the sample's `crm`, allowed its loopback address, by default).
    func webhookProvider(catalog: AppsCatalog = NotifierHarness.catalog, maxInFlight: Int = 40) -> WebhookProvider {
        WebhookProvider(
            driver: driver,
            settings: .init(maxInFlight: maxInFlight, maxInFlightPerEndpoint: 10, timeout: Self.providerTimeout, allowPlainHTTP: true),
            catalog: catalog)
    }

    /// A webhook send to the simulators' receiver `/hooks/<endpoint><path>`, decided now (its retry window runs from
    /// there).
    func webhookSend(
        id: String, endpoint: String = "crm", path: String = "", body: String = #"{"order":1}"#, headers: [String: String] = [:]
    ) -> SendRequest {
        var send = sendRequest(id: id, channel: .webhook, content: [:])
        send.decidedAt = Date()
        send.endpoint = endpoint
        send.content = ["url": "http://127.0.0.1:\(httpPort)/hooks/\(endpoint)\(path)", "method": "POST", "content_type": "application/json", "body": body]
        for (name, value) in headers { send.content["header.\(name)"] = value }
        return send
    }

    static let rsaKey = try! _RSA.Signing.PrivateKey(keySize: .bits2048)

    /// Starts a worker per channel (or the given ones) over `providers`.
    func startWorkers(_ channels: [MessageChannel] = MessageChannel.allCases, providers: [MessageChannel: [String: any DeliveryProvider]]? = nil) async throws {
        let all = try providers ?? self.providers()
        for channel in channels { run(await attachWorker(channel, providers: all[channel] ?? [:])) }
    }

    /// A worker for `channel` over `providers`, attached to the partitions (a batch's transaction claims for it and
    /// hands it the attempts), not running until `run`.
    func attachWorker(_ channel: MessageChannel, providers: [String: any DeliveryProvider]) async -> DeliveryWorker {
        let worker = DeliveryWorker(
            channel: channel, partitions: partitions, providers: providers, retry: channel == .webhook ? webhookRetry : retry,
            logger: logger, gate: channel == .webhook ? partitions.webhookGate : nil)
        worker.pollInterval = .milliseconds(20)
        await partitions.attach(worker)
        return worker
    }

    func run(_ worker: DeliveryWorker) { workers.append(Task { try? await worker.run() }) }

    func stopWorkers() async {
        for worker in workers { worker.cancel() }
        for worker in workers { await worker.value }
        workers = []
    }

    /// Feeds records as the consumer would: one batch, in order.
    func feed(_ records: [(HeraldTopic, String, [UInt8]?)]) async throws {
        var batch: [KafkaRecord] = []
        history += records
        for (topic, key, value) in records {
            let offset = offsets[topic.name, default: 0]
            offsets[topic.name] = offset + 1
            batch.append(KafkaRecord(topic: topic.name, partition: 0, offset: offset, key: Array(key.utf8), value: value))
        }
        await partitions.apply(KafkaBatch(records: batch))
    }

    /// The profile's contact tombstone that names an erasure (`herald-erasure`), as the orchestrator writes it.
    func erase(_ key: String = "demo/paul", erasure: String) async throws {
        let offset = offsets[HeraldTopic.contacts.name, default: 0]
        offsets[HeraldTopic.contacts.name] = offset + 1
        await partitions.apply(KafkaBatch(records: [
            KafkaRecord(
                topic: HeraldTopic.contacts.name, partition: 0, offset: offset, key: Array(key.utf8), value: nil,
                headers: [KafkaHeader(ErasureReceipt.header, Array(erasure.utf8))])
        ]))
    }

    func contact(_ json: String, key: String = "demo/paul") async throws {
        try await feed([(.contacts, key, Array(json.utf8))])
    }

    func send(_ request: SendRequest) async throws {
        try await feed([(request.channel.topic, request.profileKey, try Wire.encode(request))])
    }

    /// Every report on `herald.deliveries` once `enough` holds for them. Each look reads what was added since the last
    /// one, up to the end, by assignment: a fresh consumer group per look (a join each time, seconds on a busy machine)
    /// once made a test time out while its reports were there. The wait is for the condition; its bound only ends a
    /// test whose reports never come.
    func reports(until enough: @escaping @Sendable ([DeliveryReport]) -> Bool) async throws -> [DeliveryReport] {
        let partition = TopicPartition(HeraldTopic.deliveries.name, 0)
        try await waitUntil("reports on herald.deliveries", timeout: .seconds(120)) { [self] in
            let end = try await deliveriesReader.watermarks(partition).high
            let start = deliveries.withLock { $0.next }
            try await deliveriesReader.read(partition, from: start, until: end) { records in
                let reports = records.compactMap { $0.value.flatMap { try? Wire.decode(DeliveryReport.self, from: $0) } }
                deliveries.withLock { read in
                    read.reports += reports
                    read.next = (records.last?.offset ?? read.next - 1) + 1
                }
            }
            return enough(deliveries.withLock { $0.reports })
        }
        return deliveries.withLock { $0.reports }
    }

    func shutdown() async {
        await stopWorkers()
        await partitions.partitionsRevoked(topicPartitions, lost: false)
        await httpGroup.triggerGracefulShutdown()
        await apns.stop()
        await smtp.stop()
        driver.shutdown()
        await producer.shutdown()
        await inspector?.shutdown()
        await restoreReader?.shutdown()
        await deliveriesReader.shutdown()
        await cluster.shutdown()
        try? FileManager.default.removeItem(atPath: caFile)
    }
}

/// The notifier's producer, with its changelog records held at the test's word: a publish that carries one waits while
/// the gate is held, then goes to the broker, or fails as if the broker had not answered.
final class ChangelogGate: OutboxPublisher {
    private struct State {
        var holding = false
        var failing = false
        var waiters: [CheckedContinuation<Void, Never>] = []
    }

    private let producer: KafkaProducer
    private let state = Locked(State())

    init(_ producer: KafkaProducer) { self.producer = producer }

    /// Publishes of changelog records waiting at the gate now.
    var waiting: Int { state.withLock { $0.waiters.count } }

    func hold() { state.withLock { $0.holding = true } }

    /// Lets the waiting publishes and the later ones go: to the broker, or failing (`failing`).
    func release(failing: Bool = false) {
        let waiters = state.withLock { state in
            state.holding = false
            state.failing = failing
            defer { state.waiters.removeAll() }
            return state.waiters
        }
        for waiter in waiters { waiter.resume() }
    }

    func publish(_ records: [KafkaOutgoingRecord]) async throws -> [KafkaDeliveryReport] {
        if records.contains(where: { $0.topic == HeraldTopic.stateNotifier.name }) {
            await withCheckedContinuation { continuation in
                let go = state.withLock { state -> Bool in
                    if state.holding { state.waiters.append(continuation) }
                    return !state.holding
                }
                if go { continuation.resume() }
            }
            if state.withLock({ $0.failing }) {
                throw KafkaError(code: .brokerUnavailable, reason: "the test's broker did not take the changelog")
            }
        }
        return try await producer.send(records)
    }
}

/// A contact snapshot as the orchestrator publishes it (through the wire type both sides use).
func contactJSON(
    project: String = "demo", email: String? = "paul@example.com", emailMarketing: String? = "subscribed", phone: String? = "+33612345678",
    smsMarketing: String? = "subscribed", installations: [String] = [], changedAt: String = "2026-01-01T00:00:00Z",
    revision: Int = 0
) -> String {
    let changed = WireTime.parse(changedAt)
    let snapshot = ContactSnapshot(
        project: project, customID: "paul",
        email: .init(address: email, marketing: emailMarketing, marketingChangedAt: changed),
        sms: .init(phoneNumber: phone, marketing: smsMarketing, marketingChangedAt: changed),
        installations: installations.map { try! JSONDecoder().decode(ContactSnapshot.Installation.self, from: Data($0.utf8)) },
        updatedAt: changed, revision: revision)
    return String(decoding: try! Wire.encode(snapshot), as: UTF8.self)
}

/// One installation of a contact snapshot, as JSON (the element type of `ContactSnapshot.installations`).
func installationJSON(
    _ id: String, app: String = "demo-ios", token: String? = token64, permission: String = "allowed", optedOut: Bool = false,
    environment: PushEnvironment = .production, dev: Bool = false
) -> String {
    let installation = ContactSnapshot.Installation(
        installationID: id, app: app, dev: dev, token: token, environment: environment, notificationPermission: permission,
        optedOut: optedOut, pushReachable: true)
    return String(decoding: try! JSONEncoder().encode(installation), as: UTF8.self)
}

@Suite("Notifier: delivery against the simulators", .timeLimit(.minutes(5)))
struct DeliveryFlowTests {
    @Test("a push fans out to each reachable installation: APNs and FCM receive it, the opted-out one is suppressed")
    func pushFanOut() async throws {
        let harness = try await NotifierHarness()
        try await harness.contact(contactJSON(installations: [
            installationJSON("i-ios"), installationJSON("i-android", app: "demo-android", token: "fcm-token-1"),
            installationJSON("i-out", optedOut: true),
        ]))
        try await harness.startWorkers()
        try await harness.send(sendRequest(app: nil, payload: ["screen": "cart"]))
        let reports = try await harness.reports { $0.count >= 3 }
        #expect(Set(reports.map { "\($0.installationID ?? "")=\($0.outcome.rawValue)" }) == ["i-ios=sent", "i-android=sent", "i-out=suppressed"])
        #expect(reports.first { $0.installationID == "i-out" }?.reason == "opted_out")
        let sent = try #require(reports.first { $0.installationID == "i-ios" })
        #expect(sent.provider == "apns" && sent.attempts == 1 && sent.profileKey == "demo/paul" && sent.campaign == "cart")
        #expect(sent.triggeredAt == Date(timeIntervalSince1970: 1_700_000_000))
        let apns = harness.simulators.received("apns")
        #expect(apns.count == 1)
        #expect(apns.first?.headers["apns-topic"] == "com.example.demo")
        #expect(apns.first?.body.contains(#""screen":"cart""#) == true)
        let fcm = harness.simulators.received("fcm")
        #expect(fcm.count == 1 && fcm.first?.target == "fcm-token-1")
        #expect(fcm.first?.headers["authorization"]?.hasPrefix("Bearer sim-token-") == true)
        await harness.shutdown()
    }

    @Test("a send that arrives before the contact snapshot with the token waits for it; one for nobody is suppressed after a moment")
    func sendBeforeContact() async throws {
        let harness = try await NotifierHarness()
        try await harness.startWorkers([.push])
        try await harness.send(sendRequest(id: "early"))
        try await Task.sleep(for: .milliseconds(400))
        try await harness.contact(contactJSON(installations: [installationJSON("i-ios")]))
        try await harness.send(sendRequest(id: "nobody", key: "demo/ghost"))
        let reports = try await harness.reports { $0.contains { $0.sendID == "early" } && $0.contains { $0.sendID == "nobody" } }
        #expect(reports.first { $0.sendID == "early" }?.outcome == .sent)
        let nobody = try #require(reports.first { $0.sendID == "nobody" })
        #expect(nobody.outcome == .suppressed && nobody.reason == "no_contact")
        #expect(harness.simulators.count("apns") == 1)
        await harness.shutdown()
    }

    @Test("a send waits for the contact revision it was decided on, however long, and its arrival releases it at once")
    func sendWaitsForItsRevision() async throws {
        let now = Locked(Date())
        let harness = try await NotifierHarness(drainTimeout: .milliseconds(100), clock: { now.withLock { $0 } })
        // The snapshot held here is older than the decision: no installation yet.
        try await harness.contact(contactJSON(revision: 1))
        var send = sendRequest(id: "decided-on-2")
        send.contactRevision = 2
        try await harness.send(send)
        #expect(await harness.partitions.claim(.push, limit: 10).isEmpty)
        // Well past the 2 s a send without a revision waits: still waiting, not suppressed.
        now.withLock { $0 += 30 }
        #expect(await harness.partitions.claim(.push, limit: 10).isEmpty)
        #expect(try await harness.partitions.ledger(sendID: "decided-on-2").isEmpty)
        // Revision 2 arrives: the send is due at once (the clock has not moved past its next check).
        try await harness.contact(contactJSON(installations: [installationJSON("i-ios")], revision: 2))
        let claimed = await harness.partitions.claim(.push, limit: 10)
        #expect(claimed.map(\.claimed.attempt.target.installationID) == ["i-ios"])

        // A revision that never comes: after `contactRevisionWait` the send is resolved on the snapshot held here.
        var orphan = sendRequest(id: "decided-on-9")
        orphan.contactRevision = 9
        try await harness.send(orphan)
        #expect(await harness.partitions.claim(.push, limit: 10).isEmpty)
        now.withLock { $0 += SendClaims.contactRevisionWait + 0.01 }
        let resolved = await harness.partitions.claim(.push, limit: 10)
        #expect(resolved.map(\.claimed.attempt.request.sendID) == ["decided-on-9"])
        await harness.shutdown()
    }

    @Test("a send decided ahead of its time is held until then (not_before); a contact arriving does not release it")
    func heldUntilItsTime() async throws {
        let now = Locked(Date())
        let harness = try await NotifierHarness(drainTimeout: .milliseconds(100), clock: { now.withLock { $0 } })
        try await harness.contact(contactJSON(installations: [installationJSON("i-ios")]))
        let nine = now.withLock { $0 } + 60
        var early = sendRequest(id: "at-nine")
        early.notBefore = nine
        try await harness.send(early)
        try await harness.send(sendRequest(id: "now"))
        #expect(await harness.partitions.claim(.push, limit: 10).map(\.claimed.attempt.request.sendID) == ["now"])
        // A new snapshot of the profile releases sends waiting for it, not held ones.
        try await harness.contact(contactJSON(installations: [installationJSON("i-ios")], revision: 2))
        now.withLock { $0 = nine - 0.001 }
        #expect(await harness.partitions.claim(.push, limit: 10).isEmpty)
        now.withLock { $0 = nine }
        #expect(await harness.partitions.claim(.push, limit: 10).map(\.claimed.attempt.request.sendID) == ["at-nine"])
        await harness.shutdown()
    }

    @Test("sends waiting for their contact hold no claim slot: a reachable send queued behind them is claimed")
    func waitingHoldsNoSlot() async throws {
        let frozen = Date()
        let harness = try await NotifierHarness(clock: { frozen })
        try await harness.send(sendRequest(id: "waiting", key: "demo/ghost"))  // its contact has not come yet
        try await harness.contact(contactJSON(installations: [installationJSON("i-ios")]))
        try await harness.send(sendRequest(id: "ready"))
        #expect(await harness.partitions.claim(.push, limit: 1).isEmpty)  // the one slot: "waiting" looked at, put aside
        let claimed = await harness.partitions.claim(.push, limit: 1)
        #expect(claimed.map(\.claimed.attempt.request.sendID) == ["ready"])
        await harness.shutdown()
    }

    @Test("a dead token: APNs 410 reports token_invalid, and the next send to it is suppressed without a call")
    func tokenInvalidation() async throws {
        let harness = try await NotifierHarness()
        harness.simulators.markInvalid([token64])
        try await harness.contact(contactJSON(installations: [installationJSON("i-ios")]))
        try await harness.startWorkers()
        try await harness.send(sendRequest(id: "send-1"))
        _ = try await harness.reports { $0.contains { $0.outcome == .tokenInvalid } }
        try await harness.send(sendRequest(id: "send-2"))
        let reports = try await harness.reports { $0.contains { $0.sendID == "send-2" } }
        let first = try #require(reports.first { $0.sendID == "send-1" })
        #expect(first.outcome == .tokenInvalid && first.reason == "Unregistered" && first.token == token64)
        let second = try #require(reports.first { $0.sendID == "send-2" })
        #expect(second.outcome == .suppressed && second.reason == "token_invalid")
        #expect(harness.simulators.count("apns") == 1)
        await harness.shutdown()
    }

    @Test("an unsubscribe that arrives after the send was queued wins; so does a one-click unsubscribe")
    func unsubscribeAfterQueued() async throws {
        let harness = try await NotifierHarness()
        try await harness.contact(contactJSON())
        try await harness.send(sendRequest(id: "mail-1", channel: .email, content: ["subject": "S", "text": "T"]))
        // The snapshot that follows the unsubscribe, before any worker ran.
        try await harness.contact(contactJSON(emailMarketing: "unsubscribed", changedAt: "2026-01-02T00:00:00Z"))
        try await harness.startWorkers([.email, .sms])
        // A transactional email still goes; an SMS marketing send goes until the recipient replies STOP.
        try await harness.send(sendRequest(id: "mail-2", channel: .email, marketing: false, content: ["subject": "Code", "text": "1234"]))
        try await harness.send(sendRequest(id: "sms-1", channel: .sms, content: ["text": "Sale"]))
        _ = try await harness.reports { $0.contains { $0.sendID == "sms-1" } && $0.contains { $0.sendID == "mail-2" } }
        let recorded = try await harness.partitions.recordRecipientFeedback(RecipientChange(
            key: nil, phoneNumber: "+33612345678", projects: nil, channel: .sms, outcome: .unsubscribed, address: "+33612345678", reason: "reply STOP",
            at: Date()))
        #expect(recorded == 1)
        try await harness.send(sendRequest(id: "sms-2", channel: .sms, content: ["text": "Sale"]))
        let reports = try await harness.reports { $0.contains { $0.sendID == "sms-2" } }
        #expect(reports.first { $0.sendID == "mail-1" }?.outcome == .suppressed)
        #expect(reports.first { $0.sendID == "mail-1" }?.reason == "unsubscribed")
        #expect(reports.first { $0.sendID == "mail-2" }?.outcome == .sent)
        #expect(reports.first { $0.sendID == "sms-1" }?.outcome == .sent)
        #expect(reports.contains { $0.outcome == .unsubscribed && $0.channel == .sms && $0.profileKey == "demo/paul" })
        #expect(reports.first { $0.sendID == "sms-2" }?.reason == "unsubscribed")
        #expect(harness.simulators.received("smtp").map(\.target) == ["paul@example.com"])
        #expect(harness.simulators.received("smtp").first?.body.contains("List-Unsubscribe") == false)
        #expect(harness.simulators.count("sms") == 1)
        await harness.shutdown()
    }

    @Test("a send id is delivered once: replays before and after delivery, and after a restart, are not sent again")
    func duplicates() async throws {
        let harness = try await NotifierHarness()
        try await harness.contact(contactJSON(installations: [installationJSON("i-ios")]))
        let send = sendRequest(id: "dup-1")
        try await harness.send(send)
        try await harness.send(send)
        try await harness.startWorkers([.push])
        _ = try await harness.reports { $0.contains { $0.sendID == "dup-1" } }
        try await harness.send(send)
        try await harness.restart()
        try await harness.send(send)
        try await harness.startWorkers([.push])
        try await harness.send(sendRequest(id: "after"))
        _ = try await harness.reports { $0.contains { $0.sendID == "after" } }
        #expect(harness.simulators.received("apns").count == 2)
        #expect(try await harness.partitions.ledger(sendID: "dup-1").map(\.state) == ["sent"])
        await harness.shutdown()
    }

    @Test("a send past its expiry is not sent: its target is reported failed as expired, once; a target another owner finished is not reported again")
    func expired() async throws {
        let harness = try await NotifierHarness()
        try await harness.contact(contactJSON(email: nil, phone: nil, installations: [installationJSON("i-ios")]))
        // late-2's target was sent by another owner, whose report was read back before the send was replayed here.
        let target = DeliveryTarget(
            id: "i-ios", address: token64, installationID: "i-ios", app: "demo-ios", platform: .ios, environment: .production)
        let finished = DeliveryReports.report(
            sendRequest(id: "late-2"), target: target, outcome: .sent, reason: nil, attempts: 1, now: Date())
        try await harness.feed([(.deliveries, "demo/paul", finished.value)])
        let past = Date().addingTimeInterval(-1)
        try await harness.send(sendRequest(id: "late-1", expiresAt: past))
        try await harness.send(sendRequest(id: "late-2", expiresAt: past))
        try await harness.startWorkers([.push])
        try await harness.send(sendRequest(id: "after"))
        let reports = try await harness.reports { $0.contains { $0.sendID == "after" } }
        #expect(reports.filter { $0.sendID == "late-1" }.map { "\($0.outcome) \($0.reason ?? "")" } == ["failed expired"])
        #expect(!reports.contains { $0.sendID == "late-2" })
        #expect(harness.simulators.count("apns") == 1)
        #expect(try await harness.partitions.ledger(sendID: "late-1").map(\.state) == ["failed"])
        #expect(try await harness.partitions.ledger(sendID: "late-2").map(\.state) == ["sent"])
        await harness.shutdown()
    }

    @Test("ledger handover: a partition taken over without its database sends what its owner left, and nothing it had sent")
    func handover() async throws {
        let harness = try await NotifierHarness()
        try await harness.contact(contactJSON(email: nil, phone: nil, installations: [installationJSON("i-ios"), installationJSON("i-android", app: "demo-android")]))
        try await harness.startWorkers([.push])
        try await harness.send(sendRequest(id: "before-1", app: nil))  // both devices
        _ = try await harness.reports { $0.filter { $0.sendID == "before-1" }.count == 2 }
        await harness.stopWorkers()
        try await harness.send(sendRequest(id: "left-1"))  // queued at the old owner, never attempted
        #expect(harness.simulators.count("apns") == 1 && harness.simulators.count("fcm") == 1)

        // The new owner replays the contacts and sends from the beginning before it has read the reports: nothing goes
        // out while the reports are read back.
        try await harness.handOver()
        #expect(await harness.partitions.isHandingOver(0))
        try await harness.startWorkers([.push])
        try await harness.replay()
        try await Task.sleep(for: .milliseconds(300))
        #expect(harness.simulators.count("apns") == 1 && harness.simulators.count("fcm") == 1)
        #expect(await harness.partitions.claim(.push, limit: 10).isEmpty)

        let reports = try await readTopic(HeraldTopic.deliveries.name, bootstrap: harness.cluster.bootstrapServers, logger: harness.logger) {
            $0.count >= 2
        }
        try await harness.partitions.apply(KafkaBatch(records: reports))
        #expect(await !harness.partitions.isHandingOver(0))
        _ = try await harness.reports { $0.contains { $0.sendID == "left-1" } }
        // left-1 once, by the new owner; before-1 never again, on either device.
        #expect(harness.simulators.count("apns") == 2 && harness.simulators.count("fcm") == 1)
        #expect(try await harness.partitions.ledger(sendID: "before-1").map(\.state) == ["sent", "sent"])
        #expect(try await harness.partitions.ledger(sendID: "left-1").map(\.state) == ["sent"])
        await harness.shutdown()
    }

    /// The attempts of these sends are out: their claim is committed (their rows `sending`) and they are held on the
    /// partition. At least: a claim under way holds one unit of its own, and the worker's look for more work lasted long
    /// enough on a loaded machine to be seen.
    func attemptsOut(_ harness: NotifierHarness, _ sendIDs: [String]) async throws -> Bool {
        for id in sendIDs where try await harness.partitions.ledger(sendID: id).map(\.state) != ["sending"] { return false }
        return await harness.partitions.attemptsInFlight(0) >= sendIDs.count
    }

    @Test("a partition revoked with pushes in flight waits for their answers and reports them; its next owner sends none again")
    func revokeDrainsInFlight() async throws {
        let harness = try await NotifierHarness()
        // Held until released: in flight for as long as the test needs (a 700 ms delay was outrun by a loaded machine).
        harness.simulators.setFault("apns", .init(status: 0, held: true))
        try await harness.contact(contactJSON(email: nil, phone: nil, installations: [installationJSON("i-ios")]))
        try await harness.startWorkers([.push])
        for index in 0..<5 { try await harness.send(sendRequest(id: "slow-\(index)")) }
        try await waitUntil("five pushes in flight") {
            try await attemptsOut(harness, (0..<5).map { "slow-\($0)" }) && harness.simulators.heldCount == 5
        }

        // A rebalance takes the partition while the workers run: the revocation returns once the answers are recorded.
        let done = Locked(false)
        let revoked = Task {
            await harness.partitions.partitionsRevoked(harness.topicPartitions, lost: false)
            done.withLock { $0 = true }
        }
        // A negative can only be observed over a window: the revocation waits while the answers are held.
        try await Task.sleep(for: .milliseconds(300))
        #expect(!done.withLock { $0 }, "the revocation waits for the calls out")
        harness.simulators.releaseHeld()
        await revoked.value
        #expect(await harness.partitions.attemptsInFlight(0) == 0)
        #expect(harness.simulators.count("apns") == 5)
        let reports = try await harness.reports { $0.filter { $0.outcome == .sent }.count == 5 }
        #expect(Set(reports.compactMap(\.sendID)) == Set((0..<5).map { "slow-\($0)" }))

        // A new owner without the database reads the reports back, then replays the sends: none goes out again.
        harness.simulators.setFault("apns", nil)
        try await harness.handOver(revoked: true)
        try await harness.startWorkers([.push])
        try await harness.replay()
        try await harness.partitions.apply(KafkaBatch(records: try await readTopic(
            HeraldTopic.deliveries.name, bootstrap: harness.cluster.bootstrapServers, logger: harness.logger) { $0.count >= 5 }))
        #expect(await !harness.partitions.isHandingOver(0))
        try await Task.sleep(for: .milliseconds(300))
        #expect(harness.simulators.count("apns") == 5)
        #expect(try await harness.partitions.ledger(sendID: "slow-0").map(\.state) == ["sent"])
        await harness.shutdown()
    }

    @Test("a claim let in before a revocation, still waiting for the writer when it comes, claims nothing: nothing is sent after the partition left, and its next opening sends each once")
    func revokeDuringClaim() async throws {
        let harness = try await NotifierHarness()
        harness.simulators.setFault("apns", .init(status: 0, delayMilliseconds: 300))
        try await harness.contact(contactJSON(email: nil, phone: nil, installations: [installationJSON("i-ios")]))
        for index in 0..<3 { try await harness.send(sendRequest(id: "claimed-\(index)")) }
        // The database's writer is busy until the revocation has begun (a condition, not a time), so that the worker's
        // claim waits for its write when the revocation comes.
        let owner = await harness.partitions.owner
        let database = try #require(await owner.database(0))
        let inside = Locked(false)
        let busy = Task {
            try await database.write { _ in
                inside.withLock { $0 = true }
                while owner.isRunning(0) { Thread.sleep(forTimeInterval: 0.005) }
            }
        }
        try await waitUntil("the writer busy") { inside.withLock { $0 } }
        try await harness.startWorkers([.push])
        // The claim is work on the partition (it waits for the writer inside it).
        try await waitUntil("the claim under way") { await harness.partitions.owner.workInProgress(on: 0) == 1 }

        await harness.partitions.partitionsRevoked(harness.topicPartitions, lost: false)
        try await busy.value
        // The claim's write began after the revocation: it claimed nothing (the revocation waited for it), so nothing
        // is attempted after the partition left (a lost partition is not drained at all: that old owner used to send
        // what it claimed after the loss, and the new owner sent it again).
        #expect(await harness.partitions.attemptsInFlight(0) == 0)
        // A negative can only be observed over a window.
        try await Task.sleep(for: .milliseconds(600))
        #expect(harness.simulators.count("apns") == 0)
        // The sends were left pending: the partition's next opening sends each once.
        _ = try await harness.partitions.partitionsAssigned(harness.topicPartitions)
        let reports = try await harness.reports { $0.filter { $0.outcome == .sent }.count >= 3 }
        #expect(Set(reports.compactMap(\.sendID)) == Set((0..<3).map { "claimed-\($0)" }))
        #expect(harness.simulators.count("apns") == 3)
        await harness.shutdown()
    }

    /// Three pushes (`<prefix>-0` to `-2`) claimed at once by a notifier whose changelog the gate holds: the claim waits
    /// for its changelog record, so nothing is sent yet.
    func claimedBehindGate(_ prefix: String) async throws -> NotifierHarness {
        let harness = try await NotifierHarness(changelog: true)
        try await harness.contact(contactJSON(email: nil, phone: nil, installations: [installationJSON("i-ios")]))
        harness.gate.hold()
        // Queued before the worker starts, so that one claim takes the three.
        for index in 0..<3 { try await harness.send(sendRequest(id: "\(prefix)-\(index)")) }
        try await harness.startWorkers([.push])
        try await waitUntil("the partition's changelog at the gate") { harness.gate.waiting > 0 }
        // The claim comes when the worker gets to it (the sends' own changelog records may be what the gate holds
        // first): waited for, not given a fixed time, which a loaded machine once outran.
        let ids = (0..<3).map { "\(prefix)-\($0)" }
        try await waitUntil("the three claimed, waiting for the changelog") { try await attemptsOut(harness, ids) }
        // A negative can only be observed over a window.
        try await Task.sleep(for: .milliseconds(300))
        #expect(harness.simulators.count("apns") == 0, "no call before the changelog has the claim")
        #expect(try await attemptsOut(harness, ids), "claimed, still waiting for the changelog")
        return harness
    }

    /// Each of the three pushes reported sent, and made once in all.
    func expectEachSentOnce(_ harness: NotifierHarness, _ prefix: String) async throws {
        let reports = try await harness.reports { $0.filter { $0.outcome == .sent }.count == 3 }
        #expect(Set(reports.compactMap(\.sendID)) == Set((0..<3).map { "\(prefix)-\($0)" }))
        #expect(harness.simulators.count("apns") == 3)
    }

    @Test("a claim's calls wait for its `sending` rows to be in the changelog, where a next owner would restore them in doubt")
    func claimWaitsForChangelog() async throws {
        let harness = try await claimedBehindGate("logged")
        harness.gate.release()
        try await expectEachSentOnce(harness, "logged")
        await harness.shutdown()
    }

    @Test("a partition lost before its changelog had a claim makes none of its calls: the next owner, restored without the claim, sends each push once")
    func lostBeforeChangelog() async throws {
        let harness = try await claimedBehindGate("lost")
        // The group gives the partition away (this member missed its session timeout); the changelog produce in hand
        // fails, as a lost member's does.
        let owner = await harness.partitions.owner
        let revoked = Task { await harness.partitions.partitionsRevoked(harness.topicPartitions, lost: true) }
        try await waitUntil("the loss known") { !owner.isRunning(0) }
        harness.gate.release(failing: true)
        await revoked.value
        try await waitUntil("the claimed attempts dropped") { await harness.partitions.attemptsInFlight(0) == 0 }
        try await Task.sleep(for: .milliseconds(300))
        #expect(harness.simulators.count("apns") == 0, "the lost owner makes none of the calls its changelog did not take")

        // The next owner knows nothing of the claim (it is in no changelog): it sends each push, once in all.
        try await harness.handOver(revoked: true)
        try await harness.startWorkers([.push])
        try await harness.replay()
        try await expectEachSentOnce(harness, "lost")
        await harness.shutdown()
    }

    @Test("an answer that comes after its partition was released is still reported on herald.deliveries")
    func lateOutcomeReported() async throws {
        let harness = try await NotifierHarness(drainTimeout: .zero)
        harness.simulators.setFault("apns", .init(status: 0, held: true))
        try await harness.contact(contactJSON(email: nil, phone: nil, installations: [installationJSON("i-ios")]))
        try await harness.startWorkers([.push])
        for index in 0..<3 { try await harness.send(sendRequest(id: "late-\(index)")) }
        try await waitUntil("three pushes in flight") {
            try await attemptsOut(harness, (0..<3).map { "late-\($0)" }) && harness.simulators.heldCount == 3
        }
        await harness.partitions.partitionsRevoked(harness.topicPartitions, lost: false)
        #expect(await harness.partitions.openPartitions.isEmpty)
        // The answers come after the partition was released.
        harness.simulators.releaseHeld()
        let reports = try await harness.reports { $0.filter { $0.outcome == .sent }.count == 3 }
        #expect(Set(reports.compactMap(\.sendID)) == ["late-0", "late-1", "late-2"])
        #expect(reports.allSatisfy { $0.attempts == 1 && $0.provider == "apns" })
        await harness.shutdown()
    }

    @Test("a partition that comes back while its calls are still out does not attempt them again")
    func backBeforeAnswers() async throws {
        let harness = try await NotifierHarness(drainTimeout: .zero)
        harness.simulators.setFault("apns", .init(status: 0, held: true))
        try await harness.contact(contactJSON(email: nil, phone: nil, installations: [installationJSON("i-ios")]))
        try await harness.startWorkers([.push])
        for index in 0..<3 { try await harness.send(sendRequest(id: "back-\(index)")) }
        try await waitUntil("three pushes in flight") {
            try await attemptsOut(harness, (0..<3).map { "back-\($0)" }) && harness.simulators.heldCount == 3
        }
        // Released without waiting, then given back at once: the rows are still `sending`, not attempted again.
        await harness.partitions.partitionsRevoked(harness.topicPartitions, lost: false)
        _ = try await harness.partitions.partitionsAssigned(harness.topicPartitions)
        #expect(try await harness.partitions.ledger(sendID: "back-0").map(\.state) == ["sending"])
        harness.simulators.releaseHeld()
        try await waitUntil("the answers recorded") {
            try await harness.partitions.ledger(sendID: "back-2").map(\.state) == ["sent"]
        }
        try await Task.sleep(for: .milliseconds(300))
        #expect(harness.simulators.count("apns") == 3)
        for index in 0..<3 {
            #expect(try await harness.partitions.ledger(sendID: "back-\(index)").map(\.state) == ["sent"])
        }
        await harness.shutdown()
    }

    @Test("a report read back finishes a row still `sending` here: the partition came back, its attempt's answer was reported while it was away")
    func reportFinishesSending() async throws {
        let harness = try await NotifierHarness(drainTimeout: .zero)
        // Its answer held until the end (a 2 s delay was outrun by a loaded machine).
        harness.simulators.setFault("apns", .init(status: 0, held: true))
        try await harness.contact(contactJSON(email: nil, phone: nil, installations: [installationJSON("i-ios")]))
        try await harness.startWorkers([.push])
        try await harness.send(sendRequest(id: "away-0"))
        try await waitUntil("the push in flight") { try await attemptsOut(harness, ["away-0"]) && harness.simulators.heldCount == 1 }
        await harness.partitions.partitionsRevoked(harness.topicPartitions, lost: false)
        _ = try await harness.partitions.partitionsAssigned(harness.topicPartitions)
        let row = try #require(try await harness.partitions.ledger(sendID: "away-0").first)
        #expect(row.state == "sending")
        // The report the late path produces for that attempt, read back by the partition's consumer.
        var report = DeliveryReport(
            id: "away-0/\(row.targetID)/sent", sendID: "away-0", project: "demo", customID: "paul", channel: .push,
            outcome: .sent, at: Date())
        report.targetID = row.targetID
        report.profileKey = "demo/paul"
        try await harness.feed([(.deliveries, "demo/paul", try Wire.encode(report))])
        #expect(try await harness.partitions.ledger(sendID: "away-0").map(\.state) == ["sent"])
        harness.simulators.releaseHeld()
        await harness.shutdown()
    }

    @Test("an attempt's answer applies to that attempt only: a stale answer neither fails nor retries a newer attempt")
    func staleAnswer() async throws {
        let harness = try await NotifierHarness()
        try await harness.contact(contactJSON(installations: [installationJSON("i-ios")]))
        try await harness.send(sendRequest(id: "stale-1"))
        let first = try #require(await harness.partitions.claim(.push, limit: 1).first)
        // The partition comes back (a restart): the row is pending again, and claimed again as attempt 2.
        try await harness.restart()
        let second = try #require(await harness.partitions.claim(.push, limit: 1).first)
        #expect(second.claimed.attempt.attempt == 2)
        // Attempt 1's answer comes now: a failure of attempt 1 changes nothing.
        await harness.partitions.complete(
            partition: 0,
            results: [.init(claimed: first.claimed, provider: "apns", outcome: .failed(reason: .provider("BadTopic")), finishedAt: Date())],
            retry: harness.retry)
        #expect(try await harness.partitions.ledger(sendID: "stale-1").map(\.state) == ["sending"])
        // Attempt 2's answer is the one that counts.
        await harness.partitions.complete(
            partition: 0,
            results: [.init(claimed: second.claimed, provider: "apns", outcome: .accepted(messageID: nil), finishedAt: Date())],
            retry: harness.retry)
        let rows = try await harness.partitions.ledger(sendID: "stale-1")
        #expect(rows.map(\.state) == ["sent"] && rows.first?.attempts == 2)
        let reports = try await harness.reports { $0.contains { $0.sendID == "stale-1" } }
        #expect(reports.filter { $0.sendID == "stale-1" }.map(\.outcome) == [.sent])
        await harness.shutdown()
    }

    @Test("a result the database will not take is kept and written again at the relay's rounds, the partition paused meanwhile")
    func completeRetried() async throws {
        let harness = try await NotifierHarness()
        try await harness.contact(contactJSON(installations: [installationJSON("i-ios")]))
        try await harness.send(sendRequest(id: "retried-1"))
        let claimed = try #require(await harness.partitions.claim(.push, limit: 1).first)
        let database = try #require(await harness.partitions.owner.database(0))
        try await database.write { db in
            try db.execute(sql: "CREATE TEMP TRIGGER refuse_results BEFORE UPDATE ON ledger BEGIN SELECT RAISE(ABORT, 'disk trouble (test)'); END")
        }
        await harness.partitions.complete(
            partition: 0,
            results: [.init(claimed: claimed.claimed, provider: "apns", outcome: .accepted(messageID: "m-1"), finishedAt: Date())],
            retry: harness.retry)
        #expect(try await harness.partitions.ledger(sendID: "retried-1").map(\.state) == ["sending"])
        #expect(await harness.partitions.owner.pausedPartitions == [0])
        // Still refused at a round: kept.
        await harness.partitions.flushAll()
        #expect(try await harness.partitions.ledger(sendID: "retried-1").map(\.state) == ["sending"])
        try await database.write { db in try db.execute(sql: "DROP TRIGGER temp.refuse_results") }
        await harness.partitions.flushAll()
        let rows = try await harness.partitions.ledger(sendID: "retried-1")
        #expect(rows.map(\.state) == ["sent"])
        let reports = try await harness.reports { $0.contains { $0.sendID == "retried-1" } }
        #expect(reports.filter { $0.sendID == "retried-1" }.map(\.outcome) == [.sent])
        await harness.shutdown()
    }

    @Test("a stop between claiming and the provider's answer: the attempt is made again after the restart, once")
    func crashBetweenSteps() async throws {
        let harness = try await NotifierHarness()
        try await harness.contact(contactJSON(installations: [installationJSON("i-ios")]))
        try await harness.send(sendRequest(id: "crash-1"))
        // Claimed (committed as `sending`), then the process dies before the attempt's result is written.
        let claimed = await harness.partitions.claim(.push, limit: 10)
        #expect(claimed.count == 1)
        #expect(try await harness.partitions.ledger(sendID: "crash-1").map(\.state) == ["sending"])
        try await harness.restart()
        try await harness.startWorkers([.push])
        let reports = try await harness.reports { $0.contains { $0.sendID == "crash-1" } }
        #expect(reports.filter { $0.sendID == "crash-1" }.map(\.outcome) == [.sent])
        #expect(reports.first { $0.sendID == "crash-1" }?.attempts == 2)
        #expect(harness.simulators.count("apns") == 1)
        await harness.shutdown()
    }

    @Test("an attempt found `sending` at an opening is in doubt until its answer can no longer come: its report read meanwhile finishes it, never a second call")
    func inDoubtAfterStop() async throws {
        let harness = try await NotifierHarness()
        try await harness.contact(contactJSON(installations: [installationJSON("i-ios")]))
        try await harness.send(sendRequest(id: "doubt-1"))
        try await harness.send(sendRequest(id: "doubt-2"))
        // Both claimed (committed `sending`), then the instance stops: another one (here, the test) still has the calls out.
        #expect(await harness.partitions.claim(.push, limit: 10).count == 2)
        try await harness.restart(attemptsInDoubt: .seconds(3))
        try await harness.startWorkers([.push])
        // The old owner's answer to doubt-1 arrives while it is in doubt: read back from herald.deliveries, it finishes
        // the row. doubt-2's never comes: it is made again once the doubt is over.
        var report = DeliveryReport(
            id: "doubt-1/i-ios/sent", sendID: "doubt-1", project: "demo", customID: "paul", installationID: "i-ios", channel: .push,
            outcome: .sent, at: Date())
        report.targetID = "i-ios"
        report.profileKey = "demo/paul"
        try await harness.partitions.apply(KafkaBatch(records: [
            KafkaRecord(
                topic: HeraldTopic.deliveries.name, partition: 0, offset: 10_000, key: Array("demo/paul".utf8), value: try Wire.encode(report)),
        ]))
        #expect(harness.simulators.count("apns") == 0, "nothing made again while in doubt")
        let reports = try await harness.reports { $0.contains { $0.sendID == "doubt-2" && $0.outcome == .sent } }
        #expect(reports.filter { $0.sendID == "doubt-2" }.map(\.attempts) == [2])
        #expect(harness.simulators.received("apns").count == 1, "doubt-1 is never sent again")
        #expect(try await harness.partitions.ledger(sendID: "doubt-1").map(\.state) == ["sent"])
        await harness.shutdown()
    }

    @Test("badges: +1 counts per installation across sends, a number sets the count; an attempt repeated after a crash shows the same number")
    func badges() async throws {
        let harness = try await NotifierHarness()
        try await harness.contact(contactJSON(installations: [installationJSON("i-ios")]))
        try await harness.startWorkers([.push])
        func badges() -> [String] {
            harness.simulators.received("apns").compactMap { request in
                (try? JSONParser.parse(Array(request.body.utf8)))?["aps"]?["badge"].map { String(decoding: $0.serialized, as: UTF8.self) }
            }
        }
        for (id, badge) in [("b-1", "+1"), ("b-2", "+1"), ("b-3", "5"), ("b-4", "+2")] {
            try await harness.send(sendRequest(id: id, content: ["body": "B", "badge": badge]))
            _ = try await harness.reports { $0.contains { $0.sendID == id } }
        }
        #expect(badges() == ["1", "2", "5", "7"])
        await harness.stopWorkers()
        // Claimed (committed as `sending` with its number), then the process dies before the answer is written: the
        // attempt made again after the restart shows the same number, and the count moved once.
        try await harness.send(sendRequest(id: "b-5", content: ["body": "B", "badge": "+1"]))
        #expect(await harness.partitions.claim(.push, limit: 10).count == 1)
        try await harness.restart()
        try await harness.startWorkers([.push])
        _ = try await harness.reports { $0.contains { $0.sendID == "b-5" } }
        try await harness.send(sendRequest(id: "b-6", content: ["body": "B", "badge": "+1"]))
        _ = try await harness.reports { $0.contains { $0.sendID == "b-6" } }
        #expect(badges() == ["1", "2", "5", "7", "8", "9"])
        await harness.shutdown()
    }

    @Test("retries: 503 twice then accepted; a provider failing for good ends as max_retry_attempts; 400s are not retried")
    func retries() async throws {
        let harness = try await NotifierHarness()
        try await harness.contact(contactJSON(installations: [installationJSON("i-ios")]))
        try await harness.startWorkers([.push, .email])
        harness.simulators.setFault("apns", .init(status: 503, count: 2))
        try await harness.send(sendRequest(id: "retry-1"))
        _ = try await harness.reports { $0.contains { $0.sendID == "retry-1" } }
        harness.simulators.setFault("apns", .init(status: 500))
        try await harness.send(sendRequest(id: "retry-2"))
        harness.simulators.markInvalid(["paul@example.com"])
        try await harness.send(sendRequest(id: "bounce-1", channel: .email, content: ["subject": "S", "text": "T"]))
        let reports = try await harness.reports { $0.contains { $0.sendID == "retry-2" } && $0.contains { $0.sendID == "bounce-1" } }
        let first = try #require(reports.first { $0.sendID == "retry-1" })
        #expect(first.outcome == .sent && first.attempts == 3)
        let second = try #require(reports.first { $0.sendID == "retry-2" })
        #expect(second.outcome == .failed && second.reason == "max_retry_attempts" && second.attempts == 3)
        let bounce = try #require(reports.first { $0.sendID == "bounce-1" })
        #expect(bounce.outcome == .bounced && bounce.address == "paul@example.com" && bounce.attempts == 1)
        #expect(harness.simulators.received("apns").filter { $0.status == 500 }.count == 3)
        await harness.shutdown()
    }

    @Test("each provider gives up at its own deadline (FCM, SMTP, SMS): a slower answer is a timeout to retry, a deadline above it waits")
    func providerDeadlines() async throws {
        let harness = try await NotifierHarness()
        let account = ServiceAccount(
            projectID: "demo-fcm", clientEmail: "herald@demo", privateKeyID: "k1", tokenURI: "http://127.0.0.1:\(harness.httpPort)/token",
            key: NotifierHarness.rsaKey)
        // One token cache for both FCM providers: fetched once, before the simulator slows down.
        let tokens = AccessTokens(account: account, driver: harness.driver)
        func fcm(_ seconds: Int64) -> FCMProvider {
            FCMProvider(
                driver: harness.driver, tokens: tokens, baseURL: "http://127.0.0.1:\(harness.httpPort)", maxInFlight: 5,
                timeout: .seconds(seconds))
        }
        func smtp(_ seconds: Int64) -> SMTPProvider {
            var settings = SMTPProvider.Settings(url: harness.smtp.url, from: "Demo <news@example.com>", startTLS: .off)
            settings.timeout = .seconds(seconds)
            return SMTPProvider(
                driver: harness.driver, settings: settings,
                links: UnsubscribeLinks(secret: "0123456789abcdef-secret", publicURL: "http://127.0.0.1:8082"))
        }
        func sms(_ seconds: Int64) -> SMSProvider {
            var settings = SMSProvider.Settings(
                url: "http://127.0.0.1:\(harness.httpPort)/2010-04-01/Accounts/AC1/Messages.json", account: "AC1", token: "secret",
                from: "+15550001111")
            settings.timeout = .seconds(seconds)
            return SMSProvider(driver: harness.driver, settings: settings)
        }
        let android = DeliveryTarget(
            id: "a1", address: "fcm-token-1", installationID: "a1", app: "demo-android", platform: .android, environment: nil)
        let email = DeliveryTarget(id: "e", address: "paul@example.com", installationID: nil, app: nil, platform: nil, environment: nil)
        let phone = DeliveryTarget(id: "s", address: "+15550002222", installationID: nil, app: nil, platform: nil, environment: nil)
        let cases: [(name: String, provider: (Int64) -> any DeliveryProvider, attempt: DeliveryAttempt)] = [
            ("fcm", { fcm($0) }, DeliveryAttempt(request: sendRequest(app: "demo-android"), target: android, attempt: 1)),
            ("smtp", { smtp($0) }, DeliveryAttempt(request: sendRequest(channel: .email, content: ["subject": "S", "text": "T"]), target: email, attempt: 1)),
            ("sms", { sms($0) }, DeliveryAttempt(request: sendRequest(channel: .sms, content: ["text": "x"]), target: phone, attempt: 1)),
        ]
        guard case .accepted = await fcm(30).deliver(cases[0].attempt) else { Issue.record("FCM's first send"); return }
        for (name, provider, attempt) in cases {
            // No answer before a deadline of 1 s (held until then, however slow the machine): a timeout to retry.
            harness.simulators.setFault(name, .init(status: 0, held: true))
            let late = await provider(1).deliver(attempt)
            #expect(late == .retry(reason: .herald(.timeout), after: nil), "\(name): \(late)")
            harness.simulators.releaseHeld()
            // Answers 2.5 s late, before a deadline of 30 s: waited for.
            harness.simulators.setFault(name, .init(status: 0, delayMilliseconds: 2500))
            let waited = await provider(30).deliver(attempt)
            guard case .accepted = waited else {
                Issue.record("\(name) with a 30 s deadline: \(waited)")
                continue
            }
            harness.simulators.setFault(name, nil)
        }
        await harness.shutdown()
    }

    @Test("a slow SMS provider does not hold push back: every push is delivered while the SMS answers are pending")
    func channelIsolation() async throws {
        let harness = try await NotifierHarness()
        try await harness.contact(contactJSON(installations: [installationJSON("i-ios")]))
        // The SMS provider answers nothing until the pushes are done (a 3 s delay was outrun by a loaded machine).
        harness.simulators.setFault("sms", .init(status: 0, held: true))
        try await harness.startWorkers()
        for n in 0..<12 { try await harness.send(sendRequest(id: "sms-\(n)", channel: .sms, content: ["text": "x"])) }
        try await waitUntil("SMS calls out") { harness.simulators.heldCount > 0 }
        for n in 0..<20 { try await harness.send(sendRequest(id: "push-\(n)")) }
        let pushed = try await harness.reports { $0.filter { $0.channel == .push }.count >= 20 }
        #expect(pushed.filter { $0.channel == .push && $0.outcome == .sent }.count == 20)
        // Every push went out while the SMS answers were still pending.
        #expect(pushed.filter { $0.channel == .sms }.isEmpty)
        #expect(harness.simulators.heldCount > 0)
        // APNs over TLS: the 20 pushes were streams of one HTTP/2 connection.
        #expect(
            harness.simulators.connections("apns") == 1,
            "\(harness.simulators.acceptedConnections("apns")) accepted, \(harness.simulators.count("apns")) requests")
        harness.simulators.setFault("sms", nil)
        harness.simulators.releaseHeld()
        let reports = try await harness.reports { $0.filter { $0.channel == .sms }.count >= 12 }
        #expect(reports.filter { $0.channel == .sms && $0.outcome == .sent }.count == 12)
        await harness.shutdown()
    }
}

@Suite("Notifier: HTTP/2 transport")
struct TransportTests {
    @Test("APNs over cleartext HTTP/2 (an h2c proxy in front of it): consecutive requests all get their answers")
    func cleartextHTTP2() async throws {
        let state = SimulatorState()
        let apns = try await APNsSimulator.start(state: state)
        let driver = CurlDriver()
        for _ in 0..<3 {
            let result = await driver.perform(HTTPRequest(
                url: apns.url + "/3/device/\(token64)", headers: [("authorization", "bearer a.b.c"), ("apns-topic", "com.example.demo")],
                body: Array("{}".utf8), http2: true))
            #expect(try result.get().status == 200)
        }
        #expect(state.count("apns") == 3)
        driver.shutdown()
        await apns.stop()
    }

    @Test("500 pushes over one TLS connection, 50 at a time: every one answered, on that one connection")
    func manyStreamsOneConnection() async throws {
        let apns = try await TLSAPNs()
        let (state, driver, request) = (apns.state, apns.driver, apns.push)
        let failures = await withTaskGroup(of: String?.self) { group in
            var next = 0
            var failures: [String] = []
            while next < 50 {
                group.addTask { if case .failure(let error) = await driver.perform(request) { "\(error)" } else { nil } }
                next += 1
            }
            for await failure in group {
                if let failure { failures.append(failure) }
                if next < 500 {
                    group.addTask { if case .failure(let error) = await driver.perform(request) { "\(error)" } else { nil } }
                    next += 1
                }
            }
            return failures
        }
        #expect(failures.isEmpty, "\(failures.count) failed: \(failures.prefix(3))")
        #expect(state.count("apns") == 500)
        #expect(state.connections("apns") == 1)
        await apns.stop()
    }

    @Test("the simulator counts a connection when it carries a request: a stray client's socket is not a push's connection")
    func strayConnectionsNotCounted() async throws {
        let apns = try await TLSAPNs()
        // What a leftover client of an earlier listener on this port does: connects, writes something else, is dropped.
        let stray = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(apns.simulator.port).bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(stray, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        #expect(connected == 0)
        _ = send(stray, "not TLS\r\n", 9, Int32(MSG_NOSIGNAL))
        try await waitUntil("the stray socket accepted") { apns.state.acceptedConnections("apns") == 1 }
        for _ in 0..<3 { #expect(try await apns.driver.perform(apns.push).get().status == 200) }
        #expect(apns.state.acceptedConnections("apns") == 2)
        #expect(apns.state.connections("apns") == 1)
        close(stray)
        await apns.stop()
    }

    @Test("an answer's body is kept up to 64 KiB, the rest read and dropped: the status still counts")
    func answerSizeLimited() async throws {
        let state = SimulatorState()
        let port = Locked<Int?>(nil)
        let http = HTTPSimulators.application(state: state) { bound in port.withLock { $0 = bound } }
        let group = ServiceGroup(configuration: .init(services: [.init(service: http)], logger: Logger(label: "test")))
        let running = Task { try await group.run() }
        try await waitUntil("the HTTP simulators") { port.withLock { $0 } != nil }
        // The FCM simulator puts a fault's reason in its answer: 4 MB of it.
        state.setFault("fcm", .init(status: 400, reason: String(repeating: "x", count: 4_000_000)))
        let driver = CurlDriver()
        let result = await driver.perform(HTTPRequest(
            url: "http://127.0.0.1:\(port.withLock { $0 }!)/v1/projects/p/messages:send",
            headers: [("authorization", "Bearer sim-token-1"), ("content-type", "application/json")],
            body: Array(#"{"message":{"token":"t"}}"#.utf8)))
        let answer = try result.get()
        #expect(answer.status == 400)
        #expect(answer.body.count == CurlDriver.maxResponseBytes)
        driver.shutdown()
        await group.triggerGracefulShutdown()
        _ = try? await running.value
    }

    @Test("a certificate the CA file does not vouch for is refused")
    func untrustedCertificate() async throws {
        let state = SimulatorState()
        let apns = try await APNsSimulator.start(state: state, tls: try await SimulatorTLS.selfSigned(openssl: testOpenSSL))
        let other = try await SimulatorTLS.selfSigned(openssl: testOpenSSL)
        let caFile = FileManager.default.temporaryDirectory.appendingPathComponent("herald-ca-\(UUID().uuidString).pem").path
        try other.writeCertificate(to: caFile)
        let driver = CurlDriver(caFile: caFile)
        let result = await driver.perform(HTTPRequest(url: apns.url + "/3/device/\(token64)", body: Array("{}".utf8), http2: true))
        guard case .failure(let error) = result else {
            Issue.record("expected a TLS failure, got \(result)")
            return
        }
        #expect(error.code == 60 /* CURLE_PEER_FAILED_VERIFICATION */)
        #expect(state.count("apns") == 0)
        driver.shutdown()
        await apns.stop()
        try? FileManager.default.removeItem(atPath: caFile)
    }
}

/// The APNs simulator over TLS with its own certificate, and a driver that trusts it.
private struct TLSAPNs {
    let state = SimulatorState()
    let simulator: APNsSimulator
    let driver: CurlDriver
    private let caFile = FileManager.default.temporaryDirectory.appendingPathComponent("herald-ca-\(UUID().uuidString).pem").path

    init() async throws {
        let tls = try await SimulatorTLS.selfSigned(openssl: testOpenSSL)
        simulator = try await APNsSimulator.start(state: state, tls: tls)
        try tls.writeCertificate(to: caFile)
        driver = CurlDriver(caFile: caFile)
    }

    /// A push APNs accepts.
    var push: HTTPRequest {
        HTTPRequest(
            url: simulator.url + "/3/device/\(token64)", headers: [("authorization", "bearer a.b.c"), ("apns-topic", "com.example.demo")],
            body: Array("{}".utf8), http2: true)
    }

    func stop() async {
        driver.shutdown()
        await simulator.stop()
        try? FileManager.default.removeItem(atPath: caFile)
    }
}
