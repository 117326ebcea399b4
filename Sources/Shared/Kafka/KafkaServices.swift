import Logging
import Metrics
import ServiceLifecycle

/// Runs a consumer as a `Service`: hands each batch to `handle`; on graceful shutdown finishes the batch in hand,
/// hands the partitions back and leaves the group.
package struct KafkaConsumerService: Service {
    package let consumer: KafkaConsumer
    private let handle: @Sendable (KafkaBatch) async throws -> Void

    package init(consumer: KafkaConsumer, handle: @escaping @Sendable (KafkaBatch) async throws -> Void) {
        self.consumer = consumer
        self.handle = handle
    }

    /// Records per applied batch (a histogram on /metrics).
    static let batchRecords = Recorder(label: "herald_consumer_batch_records")

    /// `herald_consumer_lag{topic,partition}`: records left behind each partition at `positions` (no broker request).
    package static func recordLag(_ consumer: KafkaConsumer, at positions: [TopicPartition: Int64]) {
        for (tp, lag) in consumer.lag(at: positions) {
            Gauge(label: "herald_consumer_lag", dimensions: [("topic", tp.topic), ("partition", String(tp.partition))])
                .record(lag)
        }
    }

    package func run() async throws {
        do {
            try await withGracefulShutdownHandler {
                for try await batch in consumer.batches() {
                    try await handle(batch)
                    let next = batch.nextOffsets
                    consumer.commitProcessed(next)
                    Self.batchRecords.record(batch.records.count)
                    Self.recordLag(consumer, at: next)
                }
            } onGracefulShutdown: {
                consumer.stop()
            }
        } catch {
            await consumer.close()
            throw error
        }
        await consumer.close()
    }
}

/// Checks (and, if allowed, creates) Herald's topics before a service starts, waiting for Kafka to come up.
package enum TopicSetup {
    package static func prepare(_ config: CommonConfig, logger: Logger, waitFor: Duration = .seconds(60)) async throws {
        let admin = try KafkaAdmin(client: config.kafka, clientID: "\(config.instanceID)-admin", logger: logger)
        let specs = HeraldTopic.specs(partitions: config.topicPartitions, replicationFactor: config.topicReplication)
        let deadline = ContinuousClock.now + waitFor
        defer { Task { await admin.shutdown() } }
        while true {
            do {
                let prepared = try await admin.ensureTopics(specs, create: config.createTopics)
                if !prepared.created.isEmpty {
                    logger.notice("created topics", metadata: ["topics": .string(prepared.created.joined(separator: ","))])
                }
                if !prepared.configurationChecked {
                    logger.warning(
                        "topic configuration not checked: the brokers do not answer DescribeConfigs (the embedded broker)",
                        metadata: ["topics": .string(specs.filter { !$0.config.isEmpty }.map(\.name).joined(separator: ","))])
                }
                logger.info(
                    "topics ready",
                    metadata: ["partitions": .stringConvertible(config.topicPartitions)])
                return
            } catch let refused as TopicSettingsRefused {
                // One line per topic and setting, then the service stops: running on them would break a guarantee.
                for problem in refused.problems {
                    logger.error(
                        "topic setting refused",
                        metadata: ["topic": .string(problem.topic), "setting": .string(problem.setting), "problem": .string(problem.message)])
                }
                throw refused
            } catch let error as KafkaError where error.isRetriable && ContinuousClock.now < deadline {
                logger.warning("waiting for Kafka", metadata: ["error": "\(error)"])
                try await Task.sleep(for: .seconds(1))
            }
        }
    }
}

/// Counts consumed records per topic (`herald_records_consumed_total{topic=…}`).
package struct ConsumedRecordsMetric: Sendable {
    private let counters: [String: Counter]

    package init(topics: [String]) {
        counters = Dictionary(
            uniqueKeysWithValues: topics.map {
                ($0, Counter(label: "herald_records_consumed_total", dimensions: [("topic", $0)]))
            })
    }

    package func record(_ batch: KafkaBatch) {
        var counts: [String: Int] = [:]
        for record in batch.records { counts[record.topic, default: 0] += 1 }
        for (topic, count) in counts { counters[topic]?.increment(by: count) }
    }
}
