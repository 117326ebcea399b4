import CurlClient
import Foundation
import PartitionService
import PartitionStore
import Hummingbird
import Logging
import ServiceLifecycle
import ServiceSupport
import Shared

enum Notifier {
    /// The contacts and the send topics co-partitioned with them: the group balances `herald.contacts`' partitions,
    /// and the member given partition n reads partition n of each (`KafkaConsumerConfiguration.coPartitioned`).
    /// `herald.deliveries` is read back for the ledger handover: a partition that arrives without its database learns
    /// which targets its previous owner finished before it sends anything (docs/notifier.md#partition-handover).
    static let topics: [HeraldTopic] = [.contacts, .sendsPush, .sendsEmail, .sendsSMS, .sendsWebhook, .deliveries]

    /// The notifier: a consumer that stores contacts and queues sends per partition, one delivery worker per channel
    /// over the configured providers (all HTTP and SMTP through one libcurl thread), an outbox relay, and the HTTP
    /// endpoints recipients and providers reach (unsubscribe, SMS replies) next to `/health` and `/metrics`.
    static func buildServices(_ context: ServiceContext<NotifierSettings>) async throws -> [any Service] {
        let settings = context.config
        let logger = context.logger
        logger.info(
            "libcurl",
            metadata: ["version": .string(CurlInfo.version), "http2": .stringConvertible(CurlInfo.supportsHTTP2)])
        if !CurlInfo.supportsHTTP2 { logger.warning("libcurl lacks HTTP/2: APNs delivery will not work") }
        try FileManager.default.createDirectory(atPath: settings.service.dataDirectory, withIntermediateDirectories: true)
        try PartitionDatabase.limitMemory(bytes: Int64(settings.service.sqliteMemoryMiB) << 20)

        let producer = try KafkaProducer(
            configuration: KafkaProducerConfiguration(client: context.common.kafka, clientID: context.common.instanceID),
            logger: logger)
        await producer.prepare(topics: [.deliveries, .dlq, .stateNotifier, .owners, .webhooks, .suppressions, .erasures])
        let restoreReader = try settings.service.restoreReader(logger: logger)
        let partitions = NotifierPartitions(
            directory: settings.service.dataDirectory, producer: producer,
            changelog: ChangelogSettings(
                topic: HeraldTopic.stateNotifier.name, source: restoreReader, renamedTables: NotifierSchema.renamedTables),
            catalog: settings.catalog, logger: logger, drainTimeout: settings.drainTimeout,
            attemptsInDoubt: settings.longestAttempt + NotifierSettings.attemptMargin,
            webhookGate: WebhookGate(perEndpoint: settings.webhook.maxInFlightPerEndpoint, lapse: settings.webhookLaneLapse),
            suppressions: SuppressionList(ready: false))
        let driver = CurlDriver(caFile: settings.caFile)
        // Webhooks call the customers' endpoints, any of which may be slow: on a curl thread of their own, so that
        // none of them delays a push, an email or an SMS.
        let webhookDriver = CurlDriver(caFile: settings.caFile)
        let providers = try makeProviders(settings, driver: driver)
        logger.info(
            "providers",
            metadata: [
                "push": .string(providers.push.isEmpty ? "none" : Set(providers.push.values.map(\.name)).sorted().joined(separator: ",")),
                "email": .string(providers.email?.name ?? "none"), "sms": .string(providers.sms?.name ?? "none"),
            ])
        if settings.smsWebhookToken == nil {
            logger.warning(
                "no SMS webhook token (HERALD_SMS_WEBHOOK_TOKEN, or the SMS provider's token): SMS replies (STOP, START) are refused")
        }
        var workers: [DeliveryWorker] = []
        for channel in MessageChannel.allCases {
            let byKey: [String: any DeliveryProvider] = switch channel {
            case .push: providers.push
            case .email: providers.email.map { ["email": $0] } ?? [:]
            case .sms: providers.sms.map { ["sms": $0] } ?? [:]
            case .webhook: ["webhook": WebhookProvider(driver: webhookDriver, settings: settings.webhook, catalog: settings.catalog)]
            }
            let worker = DeliveryWorker(
                channel: channel, partitions: partitions, providers: byKey,
                retry: channel == .webhook ? settings.webhookRetry : settings.retry, logger: logger,
                gate: channel == .webhook ? partitions.webhookGate : nil)
            await partitions.attach(worker)
            workers.append(worker)
        }

        let consumer = try KafkaConsumer(
            configuration: settings.service.consumerConfiguration(topics: topics), listener: partitions, logger: logger)
        partitions.owner.setFlow(consumer)
        await partitions.onWatermarks { partition in try await consumer.watermarks(partition) }
        let consumed = ConsumedRecordsMetric(topics: topics.map(\.name))
        let consuming = KafkaConsumerService(consumer: consumer) { batch in
            consumed.record(batch)
            await partitions.apply(batch)
        }

        // The inbox and SMS replies need partitions other instances may own: this instance announces the partitions it
        // runs, with a key its peers present, and follows the others' announcements (docs/partitions.md, "Questions to
        // the owners").
        let common = context.common
        let ownership = try PartitionOwnership(
            service: "notifier", owner: partitions.owner, producer: producer, common: common, settings: settings.service,
            logger: logger)
        let peers = ownership.peers
        // Each webhook endpoint's state (disabled by a 410, enabled by a replay), read whole (docs/webhooks.md).
        let webhookStates = WebhookStateApplier(gate: partitions.webhookGate, partitions: partitions, catalog: settings.catalog, logger: logger)
        let webhookFollower = try WholeTopicFollower(.webhooks, client: common.kafka, instanceID: common.instanceID, logger: logger) {
            await webhookStates.apply($0)
        }
        // The suppression list, read whole: its addresses are never sent to (docs/data-rights.md).
        let suppressions = partitions.suppressions
        let suppressionFollower = try WholeTopicFollower(
            .suppressions, client: common.kafka, instanceID: common.instanceID, logger: logger,
            caughtUp: {
                suppressions.markReady()
                logger.info("suppression list read", metadata: ["entries": "\(suppressions.count)"])
            }
        ) { suppressions.apply($0) }

        // An export's questions, answered for the partitions this instance runs (docs/data-rights.md, "Export").
        // A person's rows are JSON, which lz4 makes several times smaller: on a producer of their own, so that no other
        // record pays for it. (The embedded broker keeps only ~5 MiB of a partition: a 10,000-row answer, 6 MB of
        // text, lost its first parts before they were read; compressed, it is one.)
        var exportProducerConfiguration = KafkaProducerConfiguration(client: common.kafka, clientID: "\(common.instanceID)-export")
        exportProducerConfiguration.compression = "lz4"
        let exportProducer = try KafkaProducer(configuration: exportProducerConfiguration, logger: logger)
        await exportProducer.prepare(topics: [.exportAnswers])
        let answering = ExportAnswering(partitions: partitions, producer: exportProducer, instance: common.instanceID, logger: logger)
        let exportQuestions = try TopicTailFollower(.exportQuestions, client: common.kafka, instanceID: common.instanceID, logger: logger) {
            await answering.answer($0)
        }

        let router = Router(context: ServiceRequestContext.self)
        router.middlewares.add(MetricsMiddleware())
        router.middlewares.add(InFlightLimitMiddleware<ServiceRequestContext>(service: "notifier", limit: settings.maxInFlightRequests))
        RecipientEndpoints(
            partitions: partitions, peers: peers, partitionCount: common.topicPartitions, producer: producer,
            publicURL: settings.publicURL,
            links: settings.unsubscribeSecret.map { UnsubscribeLinks(secret: $0, publicURL: settings.publicURL) },
            smsWebhookToken: settings.smsWebhookToken, smsSenders: SMSSenders(settings), bodyTimeout: settings.bodyTimeout,
            logger: logger
        ).register(on: router)
        if let secret = settings.unsubscribeSecret {
            TrackingEndpoints(
                links: TrackingLinks(secret: secret, publicURL: settings.publicURL), producer: producer,
                clients: ClientAddress(trustedProxies: settings.trustedProxies), reportWindow: settings.service.dedupeRetention, logger: logger
            ).register(on: router)
        }
        InboxEndpoints(
            reads: InboxReads(partitions: partitions, peers: peers, partitionCount: common.topicPartitions), catalog: settings.catalog,
            logger: logger
        ).register(on: router)
        let http = ServiceMain.httpApplication(
            router: router, context: context, service: "notifier",
            checks: [
                HealthCheck("kafka") { await consumer.brokersReachable() }, HealthCheck("group") { consumer.hasJoinedGroup },
                HealthCheck("partitions") { await partitions.owner.pausedPartitions.isEmpty },
            ])
        // Stopped in reverse: HTTP, the workers (finish what is in flight and record it), the consumer, the relay,
        // the curl thread, the producer.
        let purge = RetentionPurge(
            partitions: partitions, inboxRetention: settings.inboxRetention, sendRetention: settings.service.dedupeRetention,
            interval: settings.inboxPurgeInterval, logger: logger)
        return [
            producer, exportProducer, restoreReader, CurlService(driver: driver), CurlService(driver: webhookDriver), NotifierRelay(partitions: partitions),
            ownership.follower, webhookFollower, suppressionFollower, exportQuestions, consuming, purge,
        ] + workers + [ownership.announcer, http]
    }

    struct Providers {
        var push: [String: any DeliveryProvider] = [:]
        var email: (any DeliveryProvider)?
        var sms: (any DeliveryProvider)?
    }

    static func makeProviders(_ settings: NotifierSettings, driver: CurlDriver) throws -> Providers {
        var providers = Providers()
        if let apns = settings.apns {
            let signer: APNsTokenSigner
            do {
                signer = try APNsTokenSigner(p8: apns.keyPEM, keyID: apns.keyID, teamID: apns.teamID, refreshAfter: apns.tokenRefresh)
            } catch {
                throw ConfigError("HERALD_APNS_KEY_FILE", "not a P-256 private key in PEM (.p8): \(error)")
            }
            providers.push[Platform.ios.rawValue] = APNsProvider(driver: driver, signer: signer, settings: apns.settings, bundleIDs: settings.bundleIDs)
        }
        if let fcm = settings.fcm {
            let provider = FCMProvider(
                driver: driver, tokens: AccessTokens(account: fcm.account, driver: driver), baseURL: fcm.url,
                maxInFlight: fcm.maxInFlight, timeout: fcm.timeout)
            providers.push[Platform.android.rawValue] = provider
            providers.push[Platform.web.rawValue] = provider
        }
        if let smtp = settings.smtp, let secret = settings.unsubscribeSecret {
            providers.email = SMTPProvider(
                driver: driver, settings: smtp, links: UnsubscribeLinks(secret: secret, publicURL: settings.publicURL),
                tracking: settings.emailTracking ? TrackingLinks(secret: secret, publicURL: settings.publicURL) : nil)
        }
        if let sms = settings.sms { providers.sms = SMSProvider(driver: driver, settings: sms, senders: SMSSenders(settings)) }
        return providers
    }
}

/// Keeps the curl thread until shutdown, then stops it (transfers still running fail and are retried later).
struct CurlService: Service {
    let driver: CurlDriver

    func run() async throws {
        try? await gracefulShutdown()
        driver.shutdown()
    }
}

/// Produces outbox records left behind (a broker outage, a restart) once a second.
struct NotifierRelay: Service {
    let partitions: NotifierPartitions

    func run() async throws {
        while !Task.isCancelled && !Task.isShuttingDownGracefully {
            try? await Task.sleep(for: .seconds(1))
            await partitions.flushAll()
        }
    }
}
