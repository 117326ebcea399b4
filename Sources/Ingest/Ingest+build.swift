import Foundation
import Hummingbird
import Logging
import ServiceLifecycle
import ServiceSupport
import Shared

enum Ingest {
    /// The ingest service: the HTTP API in front of an idempotent producer. The API stops first on shutdown, then the
    /// producer flushes what it acknowledged to nobody yet (a ServiceGroup stops services in reverse order).
    static func buildServices(_ context: ServiceContext<IngestConfig>) async throws -> [any Service] {
        var producerConfig = KafkaProducerConfiguration(
            client: context.common.kafka, clientID: context.common.instanceID)
        producerConfig.deliveryTimeout = context.config.produceTimeout
        let producer = try KafkaProducer(configuration: producerConfig, logger: context.logger)
        await producer.prepare(topics: [.ingest])
        warnUnsignedIdentity(context.config.catalog, logger: context.logger)
        // The campaigns and journeys, for the trigger API: herald.config read whole, then followed, as the
        // orchestrator does.
        let triggers = TriggerDirectory()
        // The buttons' and cards' actions, for the profile writes of a reported tap.
        let actions = ActionDirectory()
        let follower = try ConfigFollower(client: context.common.kafka, instanceID: context.common.instanceID, logger: context.logger) {
            triggers.update($0)
            actions.update($0)
        }
        let router = buildRouter(
            api: IngestAPI(
                catalog: context.config.catalog, sink: KafkaRecordSink(producer: producer),
                maxBodyBytes: context.config.maxBodyBytes, now: { Date() }, bodyTimeout: context.config.bodyTimeout,
                triggers: triggers, actions: actions),
            maxInFlight: context.config.maxInFlight, maxInFlightBytes: context.config.maxInFlightBytes,
            rateLimits: RateLimits(context.config.limits))
        let http = ServiceMain.httpApplication(
            router: router, context: context, service: "ingest",
            checks: [HealthCheck("kafka") { await producer.brokersReachable() }, HealthCheck("configuration") { triggers.isLoaded }])
        return [producer, follower, http]
    }

    /// Signed identity is the default; an entry that turned it off (`"require_signed_identity": false`) lets anyone
    /// holding its key write any custom ID: say at every start which ones do.
    static func warnUnsignedIdentity(_ catalog: AppsCatalog, logger: Logger) {
        let open = catalog.projects.flatMap { project in
            project.apps.filter { !$0.requireSignedIdentity }.map { "\(project.id)/\($0.id)" }
                + project.sources.filter { !$0.requireSignedIdentity }.map { "\(project.id)/\($0.id)" }
        }
        guard !open.isEmpty else { return }
        logger.warning(
            "signed identity is off for these apps and sources (require_signed_identity: false): anyone holding their key can write any custom_id; keep such keys on your servers (docs/security.md)",
            metadata: ["apps": .string(open.joined(separator: ","))])
    }

    /// The API's routes; tests build it with a fake sink.
    static func buildRouter(
        api: IngestAPI, maxInFlight: Int = 256, maxInFlightBytes: Int = 32 << 20, rateLimits: RateLimits = .off
    ) -> Router<IngestContext> {
        let router = Router(context: IngestContext.self)
        let limiter = RateLimiter(rateLimits, service: "ingest")
        var api = api
        api.limiter = limiter
        router.middlewares.add(MetricsMiddleware())
        router.middlewares.add(RequestLogMiddleware())
        router.middlewares.add(RateLimitMiddleware(catalog: api.catalog, limiter: limiter))
        router.middlewares.add(
            InFlightLimitMiddleware<IngestContext>(service: "ingest", limit: maxInFlight, byteLimit: maxInFlightBytes, maxBodyBytes: api.maxBodyBytes))
        router.middlewares.add(IdempotencyKeyMiddleware())
        ServerController(api: api).register(on: router)
        TriggerController(api: api).register(on: router)
        AppController(api: api).register(on: router)
        BrazeController(api: api).register(on: router)
        SegmentController(api: api).register(on: router)
        SendsController(api: api).register(on: router)
        return router
    }
}
