import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import ServiceLifecycle
import ServiceSupport
import Shared

enum Notifier {
    /// The contacts and the send topics co-partitioned with them: the group balances `herald.contacts`' partitions,
    /// and the member given partition n reads partition n of each (`KafkaConsumerConfiguration.coPartitioned`).
    /// `herald.deliveries` is read back for the ledger handover: a partition that arrives without its database learns
    /// which targets its previous owner finished before it sends anything (docs/notifier.md#partition-handover).
    static let topics: [HeraldTopic] = [.contacts, .sendsPush, .sendsEmail, .sendsSMS, .deliveries]

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

        let producer = try KafkaProducer(
            configuration: KafkaProducerConfiguration(client: context.common.kafka, clientID: context.common.instanceID),
            logger: logger)
        let partitions = NotifierPartitions(
            directory: settings.service.dataDirectory, producer: producer, catalog: settings.catalog, logger: logger,
            drainTimeout: settings.drainTimeout)
        let driver = CurlDriver(caFile: settings.caFile)
        let providers = try makeProviders(settings, driver: driver)
        logger.info(
            "providers",
            metadata: [
                "push": .string(providers.push.isEmpty ? "none" : Set(providers.push.values.map(\.name)).sorted().joined(separator: ",")),
                "email": .string(providers.email?.name ?? "none"), "sms": .string(providers.sms?.name ?? "none"),
            ])
        var workers: [DeliveryWorker] = []
        for channel in MessageChannel.allCases {
            let byKey: [String: any DeliveryProvider] = switch channel {
            case .push: providers.push
            case .email: providers.email.map { ["email": $0] } ?? [:]
            case .sms: providers.sms.map { ["sms": $0] } ?? [:]
            }
            let worker = DeliveryWorker(
                channel: channel, partitions: partitions, providers: byKey, retry: settings.retry, logger: logger)
            await partitions.onSends(channel) { worker.wake() }
            workers.append(worker)
        }

        var consumerConfig = KafkaConsumerConfiguration(
            client: context.common.kafka, clientID: context.common.instanceID,
            groupID: settings.service.consumerGroup, topics: topics.map(\.name))
        consumerConfig.sessionTimeout = settings.service.sessionTimeout
        consumerConfig.coPartitioned = true
        consumerConfig.progressGroup = "\(consumerConfig.groupID).offsets"
        let consumer = try KafkaConsumer(configuration: consumerConfig, listener: partitions, logger: logger)
        await partitions.onWatermarks { partition in try await consumer.watermarks(partition) }
        let consumed = ConsumedRecordsMetric(topics: topics.map(\.name))
        let consuming = KafkaConsumerService(consumer: consumer) { batch in
            consumed.record(batch)
            try await partitions.apply(batch)
        }

        let router = Router(context: BasicRequestContext.self)
        RecipientEndpoints(
            partitions: partitions, producer: producer, publicURL: settings.publicURL,
            links: settings.unsubscribeSecret.map { UnsubscribeLinks(secret: $0, publicURL: settings.publicURL) },
            smsWebhookToken: settings.smsWebhookToken, logger: logger
        ).register(on: router)
        InboxEndpoints(partitions: partitions, catalog: settings.catalog, logger: logger).register(on: router)
        let http = ServiceMain.httpApplication(
            router: router, context: context, service: "notifier",
            checks: [HealthCheck("kafka") { await consumer.brokersReachable() }])
        // Stopped in reverse: HTTP, the workers (finish what is in flight and record it), the consumer, the relay,
        // the curl thread, the producer.
        let purge = InboxPurge(
            partitions: partitions, retention: settings.inboxRetention, interval: settings.inboxPurgeInterval, logger: logger)
        return [producer, CurlService(driver: driver), NotifierRelay(partitions: partitions), consuming, purge] + workers + [http]
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
            providers.push["ios"] = APNsProvider(driver: driver, signer: signer, settings: apns.settings, bundleIDs: settings.bundleIDs)
        }
        if let fcm = settings.fcm {
            let provider = FCMProvider(
                driver: driver, tokens: AccessTokens(account: fcm.account, driver: driver), baseURL: fcm.url,
                maxInFlight: fcm.maxInFlight)
            providers.push["android"] = provider
            providers.push["web"] = provider
        }
        if let smtp = settings.smtp, let secret = settings.unsubscribeSecret {
            providers.email = SMTPProvider(
                driver: driver, settings: smtp, links: UnsubscribeLinks(secret: secret, publicURL: settings.publicURL))
        }
        if let sms = settings.sms { providers.sms = SMSProvider(driver: driver, settings: sms) }
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

/// Deletes inbox entries older than the retention, at start and then every `interval`.
struct InboxPurge: Service {
    let partitions: NotifierPartitions
    let retention: Duration
    let interval: Duration
    let logger: Logger
    var clock: @Sendable () -> Date = { Date() }

    func run() async throws {
        // The wait between rounds is long: a graceful shutdown cancels it rather than waiting it out.
        try? await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                await round()
                try await Task.sleep(for: interval)
            }
        }
    }

    /// One purge over the open partitions; returns how many entries went.
    @discardableResult
    func round() async -> Int {
        let cutoff = clock().addingTimeInterval(-retention.timeInterval)
        do {
            let purged = try await partitions.purgeInbox(before: cutoff)
            NotifierMetrics.purgedFromInbox(purged)
            if purged > 0 { logger.info("inbox purged", metadata: ["entries": "\(purged)", "before": "\(WireTime.format(cutoff))"]) }
            return purged
        } catch {
            logger.warning("inbox purge failed", metadata: ["error": "\(error)"])
            return 0
        }
    }
}

/// What recipients and providers call: one-click unsubscribe (RFC 8058) and inbound SMS replies.
struct RecipientEndpoints: Sendable {
    let partitions: NotifierPartitions
    let producer: KafkaProducer
    let publicURL: String
    let links: UnsubscribeLinks?
    let smsWebhookToken: String?
    let logger: Logger

    func register(on router: Router<BasicRequestContext>) {
        // GET shows a confirmation (link scanners fetch URLs; only a POST unsubscribes).
        router.get("v1/unsubscribe/:token") { _, context in
            guard let claim = links?.verify(context.parameters.get("token") ?? "") else { return Self.invalidLink }
            let action = "\(publicURL)/v1/unsubscribe/\(context.parameters.get("token") ?? "")"
            return Self.html(.ok, """
                <!doctype html><meta charset="utf-8"><title>Unsubscribe</title>
                <p>Stop marketing email to \(Self.escape(claim.address))?</p>
                <form method="post" action="\(Self.escape(action))"><button type="submit">Unsubscribe</button></form>
                """)
        }
        router.post("v1/unsubscribe/:token") { request, context in
            guard let claim = links?.verify(context.parameters.get("token") ?? "") else { return Self.invalidLink }
            _ = try await request.body.collect(upTo: 64 * 1024)
            try await unsubscribe(claim)
            return Self.html(.ok, "<!doctype html><meta charset=\"utf-8\"><p>You will not receive marketing email any more.</p>")
        }
        router.post("v1/webhooks/sms") { request, _ in
            let body = Array(buffer: try await request.body.collect(upTo: 64 * 1024))
            let form = FormEncoding.decode(body)
            if let token = smsWebhookToken {
                let signature = request.headers[HTTPField.Name("X-Twilio-Signature")!] ?? ""
                guard SMSReplies.verify(signature: signature, url: "\(publicURL)/v1/webhooks/sms", parameters: form, token: token)
                else { return Response.jsonError(.forbidden, "invalid_signature", "X-Twilio-Signature does not match the request") }
            }
            guard let from = form.first(where: { $0.0 == "From" })?.1, from.hasPrefix("+"), from.count >= 2 else {
                return Response.jsonError(.badRequest, "invalid_field", "From: expected an E.164 phone number")
            }
            let text = form.first(where: { $0.0 == "Body" })?.1 ?? ""
            if let outcome = SMSReplies.outcome(text) {
                let recorded = try await partitions.recordRecipientFeedback(
                    key: nil, phoneNumber: from, channel: .sms, outcome: outcome, address: from,
                    reason: "reply \(text.trimmingCharacters(in: .whitespacesAndNewlines).uppercased())", at: Date())
                logger.info(
                    "sms reply", metadata: ["outcome": "\(outcome.rawValue)", "profiles": "\(recorded)"])
                if recorded == 0 {
                    logger.warning("sms reply from a number no partition of this instance knows", metadata: ["outcome": "\(outcome.rawValue)"])
                }
            }
            return Response(
                status: .ok, headers: [.contentType: "text/xml"],
                body: ResponseBody(byteBuffer: ByteBuffer(string: "<?xml version=\"1.0\" encoding=\"UTF-8\"?><Response></Response>")))
        }
    }

    /// Local state at once when this instance holds the profile; the report to the orchestrator either way.
    private func unsubscribe(_ claim: UnsubscribeLinks.Claim) async throws {
        let recorded = try await partitions.recordRecipientFeedback(
            key: claim.profileKey, phoneNumber: nil, channel: .email, outcome: .unsubscribed, address: claim.address,
            reason: "one-click unsubscribe", at: Date())
        guard recorded == 0 else { return }
        let report = DeliveryReport.recipientFeedback(
            key: claim.profileKey, customID: nil, channel: .email, outcome: .unsubscribed, address: claim.address,
            reason: "one-click unsubscribe", sendID: claim.sendID, at: Date())
        _ = try await producer.send([
            KafkaOutgoingRecord(topic: HeraldTopic.deliveries.name, key: Array(claim.profileKey.utf8), value: try Wire.encode(report))
        ])
    }

    static var invalidLink: Response { .jsonError(.notFound, "invalid_link", "this unsubscribe link is not valid") }


    static func html(_ status: HTTPResponse.Status, _ text: String) -> Response {
        Response(status: status, headers: [.contentType: "text/html; charset=utf-8"], body: ResponseBody(byteBuffer: ByteBuffer(string: text)))
    }

    static func escape(_ text: String) -> String {
        text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
            .replacingOccurrences(of: ">", with: "&gt;").replacingOccurrences(of: "\"", with: "&quot;")
    }
}
