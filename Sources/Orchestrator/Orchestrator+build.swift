import Foundation
import Hummingbird
import ServiceLifecycle
import ServiceSupport
import Shared

enum Orchestrator {
    static let topics: [HeraldTopic] = [.ingest, .deliveries]

    /// The orchestrator: a member of its consumer group on `herald.ingest` and `herald.deliveries`, plus the ops
    /// endpoints. Processing of the records (profiles in per-partition SQLite) comes with the profiles issue; until
    /// then records are counted and nothing is committed, so nothing is lost for the code that will process them.
    static func buildServices(_ context: ServiceContext<StatefulServiceConfig>) async throws -> [any Service] {
        try FileManager.default.createDirectory(
            atPath: context.config.dataDirectory, withIntermediateDirectories: true)
        let names = topics.map(\.name)
        var consumerConfig = KafkaConsumerConfiguration(
            client: context.common.kafka, clientID: context.common.instanceID,
            groupID: context.config.consumerGroup, topics: names)
        consumerConfig.sessionTimeout = context.config.sessionTimeout
        let consumer = try KafkaConsumer(configuration: consumerConfig, logger: context.logger)
        let consumed = ConsumedRecordsMetric(topics: names)
        let consuming = KafkaConsumerService(consumer: consumer) { batch in consumed.record(batch) }

        let router = Router()
        OpsEndpoints.register(
            on: router, service: "orchestrator",
            checks: [HealthCheck("kafka") { await consumer.brokersReachable() }],
            registry: context.registry)
        let http = ServiceMain.httpApplication(
            router: router, common: context.common, service: "orchestrator", logger: context.logger)
        return [consuming, http]
    }
}
