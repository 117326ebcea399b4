import Foundation
import Hummingbird
import OrchestratorDomain
import PartitionService
import PartitionStore
import ServiceLifecycle
import ServiceSupport
import Shared

enum Orchestrator {
    static let topics: [HeraldTopic] = [.ingest, .deliveries]

    /// The orchestrator: a member of its consumer group on `herald.ingest` and `herald.deliveries` that applies the
    /// writes to per-partition SQLite databases, a producer for the outbox, and the HTTP endpoints (ops, and a
    /// read-only profile view).
    static func buildServices(_ context: ServiceContext<OrchestratorConfig>) async throws -> [any Service] {
        try PartitionDatabase.limitMemory(bytes: Int64(context.config.service.sqliteMemoryMiB) << 20)
        let producer = try KafkaProducer(
            configuration: KafkaProducerConfiguration(client: context.common.kafka, clientID: context.common.instanceID),
            logger: context.logger)
        await producer.prepare(topics: [.ingest, .contacts, .sendsPush, .sendsEmail, .sendsSMS, .sendsWebhook, .dlq, .stateOrchestrator, .owners, .suppressions, .erasures, .exportQuestions])
        let restoreReader = try context.config.service.restoreReader(logger: context.logger)
        let manager = OrchestratorPartitions(
            directory: context.config.service.dataDirectory, producer: producer,
            changelog: ChangelogSettings(topic: HeraldTopic.stateOrchestrator.name, source: restoreReader),
            logger: context.logger, dedupeRetention: context.config.service.dedupeRetention,
            partitions: Int(context.common.topicPartitions), cachedTags: context.config.inAppCachedTags)
        let consumer = try KafkaConsumer(
            configuration: context.config.service.consumerConfiguration(topics: topics), listener: manager, logger: context.logger)
        manager.owner.setFlow(consumer)
        let follower = try ConfigFollower(client: context.common.kafka, instanceID: context.common.instanceID, logger: context.logger) {
            await manager.setConfiguration($0)
        }
        let consumed = ConsumedRecordsMetric(topics: topics.map(\.name))
        let consuming = KafkaConsumerService(consumer: consumer) { batch in
            try await follower.waitUntilLoaded()
            consumed.record(batch)
            await manager.apply(batch)
        }

        let router = Router(context: ServiceRequestContext.self)
        router.middlewares.add(MetricsMiddleware())
        // The app-facing reads (docs/in-app.md) are answered by the partition's owner, and questions about several
        // partitions (a campaign's experiment figures) go to their owners: this instance announces the partitions it
        // runs and follows the others' announcements (docs/partitions.md).
        let common = context.common
        let ownership = try PartitionOwnership(
            service: "orchestrator", owner: manager.owner, producer: producer, common: common, settings: context.config.service,
            logger: context.logger)
        let peers = ownership.peers
        let experiments = ExperimentEndpoints(manager: manager, peers: peers, partitionCount: common.topicPartitions)
        experiments.answer(on: router)
        let journeys = JourneyEndpoints(manager: manager, peers: peers, partitionCount: common.topicPartitions)
        journeys.answer(on: router)
        // An export's notifier part is asked through Kafka: its answers are followed from the start.
        let notifierAnswers = ExportAnswers(producer: producer, instance: common.instanceID, partitionCount: common.topicPartitions, logger: context.logger)
        let answersFollower = try TopicTailFollower(.exportAnswers, client: common.kafka, instanceID: common.instanceID, logger: context.logger) {
            notifierAnswers.apply($0)
        }
        let exports = ExportEndpoints(
            manager: manager, peers: peers, notifiers: notifierAnswers, following: { answersFollower.isFollowing },
            partitionCount: common.topicPartitions)
        exports.answer(on: router)
        // The apps' reads are public: bounded in flight and per client, as the ingest's writes are.
        AppReads(manager: manager, catalog: context.config.catalog, owners: ownership.owners, instance: common.instanceID).register(
            on: router, limits: RateLimits(context.config.limits), maxInFlight: context.config.maxInFlight, peerKey: peers.key)
        let http = ServiceMain.httpApplication(
            router: router, context: context, service: "orchestrator",
            checks: [
                HealthCheck("kafka") { await consumer.brokersReachable() }, HealthCheck("group") { consumer.hasJoinedGroup },
                HealthCheck("partitions") { await manager.owner.pausedPartitions.isEmpty },
            ],
            operatorRoutes: { reads in
                ProfileReadEndpoints(manager: manager).register(on: reads)
                experiments.register(on: reads)
                journeys.register(on: reads)
                exports.register(on: reads)
            })
        // Stopped in reverse: HTTP, the relay, then the consumer (finishes its batch, flushes the outbox on
        // revocation), then the producer flushes.
        return [
            producer, restoreReader, follower, ownership.follower, answersFollower, consuming, OutboxRelay(manager: manager),
            EngagementTicker(manager: manager), ownership.announcer, http,
        ]
    }
}
