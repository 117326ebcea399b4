import Foundation
import Logging
import Hummingbird
import ServiceLifecycle
import ServiceSupport
import Shared

enum Notifier {
    /// The send topics and the contacts they are co-partitioned with: range assignment gives one member the same
    /// partition number of each.
    static let topics: [HeraldTopic] = [.contacts, .sendsPush, .sendsEmail, .sendsSMS]

    /// The notifier: a member of its consumer group on `herald.contacts` and `herald.sends.*`, plus the ops endpoints.
    /// Delivery comes with the notifier issue; until then records are counted and nothing is committed.
    static func buildServices(_ context: ServiceContext<StatefulServiceConfig>) async throws -> [any Service] {
        context.logger.info(
            "libcurl", metadata: ["version": .string(CurlInfo.version), "http2": .stringConvertible(CurlInfo.supportsHTTP2)])
        if !CurlInfo.supportsHTTP2 {
            context.logger.warning("libcurl lacks HTTP/2: APNs delivery will not work")
        }
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
            on: router, service: "notifier",
            checks: [HealthCheck("kafka") { await consumer.brokersReachable() }],
            registry: context.registry)
        let http = ServiceMain.httpApplication(
            router: router, common: context.common, service: "notifier", logger: context.logger)
        return [consuming, http]
    }
}
