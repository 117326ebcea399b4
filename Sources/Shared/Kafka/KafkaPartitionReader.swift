import CRdKafka
import Logging
import ServiceLifecycle

/// Reads one partition from an offset up to another, outside any group's assignment: a restore reads a changelog
/// partition with it before the member processes that partition. The handle has a group id only because librdkafka
/// routes fetched records to the consumer queue through one; it never joins that group nor commits to it.
package final class KafkaPartitionReader: Service, Sendable {
    private let runtime: RdKafkaRuntime

    package init(client: KafkaClientSettings, clientID: String, groupID: String, logger: Logger) throws(KafkaError) {
        var configuration = client.base(clientID: clientID)
        configuration.set("group.id", groupID)
        configuration.set("enable.auto.commit", "false")
        configuration.set("enable.auto.offset.store", "false")
        configuration.set("enable.partition.eof", "true")
        configuration.set("auto.offset.reset", "earliest")
        configuration.set("fetch.wait.max.ms", "50")
        self.runtime = try RdKafkaRuntime(
            type: RD_KAFKA_CONSUMER, configuration: configuration, events: RD_KAFKA_EVENT_FETCH, logger: logger,
            extraQueues: { [rd_kafka_queue_get_consumer($0)] },
            destroyFlags: Int32(RD_KAFKA_DESTROY_F_NO_CONSUMER_CLOSE), onEvent: { _, _ in })
    }

    /// The partition's first and next offsets (the next is where the next record produced will go).
    package func watermarks(_ partition: TopicPartition, timeout: Duration = .seconds(10)) async throws -> (low: Int64, high: Int64) {
        try await OffsetQueries.watermarks(runtime, partition, timeout: timeout)
    }

    /// Hands `body` the records of `partition` from `start` (or the first one kept, if the log starts later) up to
    /// `end` (exclusive), in offset order, in chunks. A compacted log may skip offsets. Throws what `body` throws, or a
    /// timeout when the broker gives nothing for `idleTimeout`.
    package func read(
        _ partition: TopicPartition, from start: Int64, until end: Int64, idleTimeout: Duration = .seconds(30),
        _ body: ([KafkaRecord]) async throws -> Void
    ) async throws {
        guard start < end else { return }
        try await runtime.perform { [runtime] in
            let err = withPartitionList([(partition, start)]) { rd_kafka_assign(runtime.handle, $0) }
            if err != RD_KAFKA_RESP_ERR_NO_ERROR { throw KafkaError(err, context: "assign \(partition) to read it") }
        }
        do {
            try await readAssigned(partition, until: end, idleTimeout: idleTimeout, body)
        } catch {
            _ = try? await runtime.perform { [runtime] in rd_kafka_assign(runtime.handle, nil) }
            throw error
        }
        _ = try? await runtime.perform { [runtime] in rd_kafka_assign(runtime.handle, nil) }
    }

    private func readAssigned(
        _ partition: TopicPartition, until end: Int64, idleTimeout: Duration, _ body: ([KafkaRecord]) async throws -> Void
    ) async throws {
        var lastProgress = ContinuousClock.now
        while true {
            let (records, atEnd) = try await runtime.perform { [runtime] in
                Self.poll(runtime: runtime, timeoutMs: 100, end: end)
            }
            if !records.isEmpty {
                lastProgress = ContinuousClock.now
                try await body(records)
            }
            if atEnd || (records.last.map { $0.offset + 1 >= end } ?? false) { return }
            if ContinuousClock.now - lastProgress > idleTimeout {
                throw KafkaError(code: .timedOut, reason: "reading \(partition) up to offset \(end): nothing for \(idleTimeout)")
            }
        }
    }

    /// One poll of the consumer queue: the records below `end`, and whether the partition's end (or `end`) was reached.
    private static func poll(runtime: RdKafkaRuntime, timeoutMs: Int32, end: Int64) -> ([KafkaRecord], Bool) {
        let queue = runtime.wakeQueues[0]
        var records: [KafkaRecord] = []
        var atEnd = false
        var first = rd_kafka_queue_poll(queue, 0)
        if first == nil { first = rd_kafka_queue_poll(queue, timeoutMs) }
        while records.count < 5000, let event = first ?? rd_kafka_queue_poll(queue, 0) {
            first = nil
            defer { rd_kafka_event_destroy(event) }
            switch rd_kafka_event_type(event) {
            case RD_KAFKA_EVENT_FETCH:
                while let message = rd_kafka_event_message_next(event) {
                    switch message.pointee.err {
                    case RD_KAFKA_RESP_ERR_NO_ERROR:
                        if message.pointee.offset < end { records.append(KafkaRecord(message)) } else { atEnd = true }
                    case RD_KAFKA_RESP_ERR__PARTITION_EOF:
                        if message.pointee.offset >= end { atEnd = true }
                    default:
                        runtime.logger.warning(
                            "partition reader error", metadata: ["error": "\(KafkaError(message.pointee.err, context: "fetch"))"])
                    }
                }
            case RD_KAFKA_EVENT_LOG:
                runtime.dispatch(event)
            default:
                break
            }
        }
        return (records, atEnd)
    }

    package func shutdown() async { await runtime.stop() }

    package func run() async throws {
        try? await gracefulShutdown()
        await shutdown()
    }
}
