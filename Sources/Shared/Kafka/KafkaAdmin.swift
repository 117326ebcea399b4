import CRdKafka
import Logging

/// Topic metadata and creation through the Kafka admin API (real clusters). The embedded broker creates its topics
/// in-process instead (`EmbeddedKafkaCluster`), since the mock cluster does not answer CreateTopics.
package final class KafkaAdmin: Sendable {
    private let runtime: RdKafkaRuntime

    package init(client: KafkaClientSettings, clientID: String, logger: Logger) throws(KafkaError) {
        self.runtime = try RdKafkaRuntime(
            type: RD_KAFKA_PRODUCER,
            configuration: client.base(clientID: clientID),
            events: 0,
            logger: logger,
            onEvent: { _, _ in }
        )
    }

    /// Every topic of the cluster with its partition count.
    package func describeTopics(timeout: Duration = .seconds(10)) async throws -> [String: Int32] {
        let result = await runtime.blockingCall { handle -> Result<[String: Int32], KafkaError> in
            var metadata: UnsafePointer<rd_kafka_metadata>?
            let err = rd_kafka_metadata(handle, 1, nil, &metadata, Int32(timeout.milliseconds))
            guard err == RD_KAFKA_RESP_ERR_NO_ERROR, let metadata else {
                return .failure(KafkaError(err, context: "read cluster metadata"))
            }
            defer { rd_kafka_metadata_destroy(metadata) }
            var topics: [String: Int32] = [:]
            for index in 0..<Int(metadata.pointee.topic_cnt) {
                let topic = metadata.pointee.topics[index]
                guard topic.err == RD_KAFKA_RESP_ERR_NO_ERROR else { continue }
                topics[String(cString: topic.topic)] = topic.partition_cnt
            }
            return .success(topics)
        }
        guard let result else { throw KafkaError.closed("admin client") }
        return try result.get()
    }

    /// Creates `specs` with the admin API; a topic that already exists is not an error.
    package func createTopics(_ specs: [TopicSpec], timeout: Duration = .seconds(30)) async throws {
        guard !specs.isEmpty else { return }
        let result = await runtime.blockingCall { handle -> Result<Void, KafkaError> in
            Self.create(specs, handle: handle, timeoutMs: Int32(timeout.milliseconds))
        }
        guard let result else { throw KafkaError.closed("admin client") }
        try result.get()
    }

    private static func create(_ specs: [TopicSpec], handle: OpaquePointer, timeoutMs: Int32) -> Result<Void, KafkaError>
    {
        var errstr = [CChar](repeating: 0, count: 512)
        var newTopics: [OpaquePointer?] = []
        defer { for topic in newTopics { rd_kafka_NewTopic_destroy(topic) } }
        for spec in specs {
            guard let topic = rd_kafka_NewTopic_new(spec.name, spec.partitions, spec.replicationFactor, &errstr, 512)
            else {
                let text = errstr.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
                return .failure(KafkaError(code: .configuration, reason: "topic \(spec.name): \(text)"))
            }
            newTopics.append(topic)
            for (key, value) in spec.config.sorted(by: { $0.key < $1.key }) {
                let err = rd_kafka_NewTopic_set_config(topic, key, value)
                if err != RD_KAFKA_RESP_ERR_NO_ERROR {
                    return .failure(KafkaError(err, context: "topic \(spec.name) config \(key)"))
                }
            }
        }
        let queue = rd_kafka_queue_new(handle)
        defer { rd_kafka_queue_destroy(queue) }
        let options = rd_kafka_AdminOptions_new(handle, RD_KAFKA_ADMIN_OP_CREATETOPICS)
        defer { rd_kafka_AdminOptions_destroy(options) }
        _ = rd_kafka_AdminOptions_set_request_timeout(options, timeoutMs, &errstr, 512)
        _ = rd_kafka_AdminOptions_set_operation_timeout(options, timeoutMs, &errstr, 512)
        newTopics.withUnsafeMutableBufferPointer { buffer in
            rd_kafka_CreateTopics(handle, buffer.baseAddress, buffer.count, options, queue)
        }
        guard let event = rd_kafka_queue_poll(queue, timeoutMs + 1000) else {
            return .failure(KafkaError(code: .timedOut, reason: "CreateTopics got no answer in \(timeoutMs) ms"))
        }
        defer { rd_kafka_event_destroy(event) }
        let err = rd_kafka_event_error(event)
        if err != RD_KAFKA_RESP_ERR_NO_ERROR {
            return .failure(KafkaError(err, context: "CreateTopics"))
        }
        guard let created = rd_kafka_event_CreateTopics_result(event) else {
            return .failure(KafkaError(code: .other, reason: "CreateTopics answered with an unexpected event"))
        }
        var count = 0
        guard let results = rd_kafka_CreateTopics_result_topics(created, &count) else { return .success(()) }
        for index in 0..<count {
            let result = results[index]
            let topicErr = rd_kafka_topic_result_error(result)
            if topicErr != RD_KAFKA_RESP_ERR_NO_ERROR, topicErr != RD_KAFKA_RESP_ERR_TOPIC_ALREADY_EXISTS {
                let name = String(cString: rd_kafka_topic_result_name(result))
                let text = rd_kafka_topic_result_error_string(result).map { String(cString: $0) } ?? ""
                return .failure(KafkaError(topicErr, context: "create topic \(name) (\(text))"))
            }
        }
        return .success(())
    }

    /// Makes sure `specs` exist: creates the missing ones (unless `create` is false), then checks every topic's
    /// partition count, since Herald's co-partitioning breaks silently if keyed topics differ. Returns the names it
    /// created.
    @discardableResult
    package func ensureTopics(_ specs: [TopicSpec], create: Bool = true, timeout: Duration = .seconds(30)) async throws
        -> [String]
    {
        let existing = try await describeTopics()
        let missing = create ? specs.filter { existing[$0.name] == nil } : []
        guard !missing.isEmpty else {
            try Self.check(specs, against: existing)
            return []
        }
        try await createTopics(missing, timeout: timeout)
        var topics = try await describeTopics()
        let deadline = ContinuousClock.now + timeout
        // A new topic's metadata reaches every broker shortly after creation.
        while specs.contains(where: { topics[$0.name] == nil }), ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(200))
            topics = try await describeTopics()
        }
        try Self.check(specs, against: topics)
        return missing.map(\.name)
    }

    private static func check(_ specs: [TopicSpec], against topics: [String: Int32]) throws {
        for spec in specs {
            guard let partitions = topics[spec.name] else {
                throw KafkaError(code: .unknownTopic, reason: "topic \(spec.name) does not exist and was not created")
            }
            guard partitions == spec.partitions else {
                throw KafkaError(
                    code: .configuration,
                    reason:
                        "topic \(spec.name) has \(partitions) partitions, expected \(spec.partitions): every keyed topic must have the same partition count"
                )
            }
        }
    }

    package func shutdown() async { await runtime.stop() }
}

/// Reads a consumer group's committed offsets and the partitions' end offsets without joining the group (no
/// subscription, so the group's members are never rebalanced): what `herald lag` prints.
package final class KafkaGroupInspector: Sendable {
    private let runtime: RdKafkaRuntime

    package init(client: KafkaClientSettings, groupID: String, logger: Logger) throws(KafkaError) {
        var configuration = client.base(clientID: "herald-inspector")
        configuration.set("group.id", groupID)
        configuration.set("enable.auto.commit", "false")
        self.runtime = try RdKafkaRuntime(
            type: RD_KAFKA_CONSUMER, configuration: configuration, events: 0, logger: logger,
            destroyFlags: Int32(RD_KAFKA_DESTROY_F_NO_CONSUMER_CLOSE), onEvent: { _, _ in })
    }

    /// The group's committed offsets for `partitions` (absent: none committed).
    package func committed(_ partitions: [TopicPartition], timeout: Duration = .seconds(10)) async throws -> [TopicPartition: Int64] {
        try await OffsetQueries.committed(runtime, partitions, timeout: timeout)
    }

    /// The first and the next offset of a partition (low and high watermarks).
    package func watermarks(_ partition: TopicPartition, timeout: Duration = .seconds(10)) async throws -> (low: Int64, high: Int64) {
        try await OffsetQueries.watermarks(runtime, partition, timeout: timeout)
    }

    package func shutdown() async { await runtime.stop() }
}

/// Offset questions a consumer-type handle asks the brokers.
enum OffsetQueries {
    static func committed(_ runtime: RdKafkaRuntime, _ partitions: [TopicPartition], timeout: Duration) async throws
        -> [TopicPartition: Int64]
    {
        let entries = partitions.map { ($0, HERALD_OFFSET_INVALID) }
        return try await runtime.perform { [runtime] in
            try withPartitionList(entries) { list in
                let err = rd_kafka_committed(runtime.handle, list, Int32(timeout.milliseconds))
                if err != RD_KAFKA_RESP_ERR_NO_ERROR { throw KafkaError(err, context: "read committed offsets") }
                var result: [TopicPartition: Int64] = [:]
                for (tp, offset) in list.pointee.entries where offset >= 0 { result[tp] = offset }
                return result
            }
        }
    }

    static func watermarks(_ runtime: RdKafkaRuntime, _ partition: TopicPartition, timeout: Duration) async throws
        -> (low: Int64, high: Int64)
    {
        try await runtime.perform { [runtime] in
            var low: Int64 = 0
            var high: Int64 = 0
            let err = rd_kafka_query_watermark_offsets(
                runtime.handle, partition.topic, partition.partition, &low, &high, Int32(timeout.milliseconds))
            if err != RD_KAFKA_RESP_ERR_NO_ERROR { throw KafkaError(err, context: "watermarks of \(partition)") }
            return (low, high)
        }
    }
}
