import Hummingbird
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

        let router = Router()
        router.middlewares.add(MetricsMiddleware())
        let http = ServiceMain.httpApplication(
            router: router, context: context, service: "ingest",
            checks: [HealthCheck("kafka") { await producer.brokersReachable() }])
        return [producer, http]
    }
}
