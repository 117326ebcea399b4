import CRdKafka
import Logging

/// Topic metadata and creation through the Kafka admin API (real clusters). The embedded broker creates its topics
/// in-process instead (`EmbeddedKafkaCluster`), since the mock cluster does not answer CreateTopics.
package final class KafkaAdmin: TopicAdministration {
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
        try await topicStates(timeout: timeout).mapValues(\.partitions)
    }

    package func topicStates() async throws -> [String: TopicState] { try await topicStates(timeout: .seconds(10)) }

    /// Every topic of the cluster: its partition count and the fewest replicas of any of its partitions.
    package func topicStates(timeout: Duration) async throws -> [String: TopicState] {
        let result = await runtime.blockingCall { handle -> Result<[String: TopicState], KafkaError> in
            var metadata: UnsafePointer<rd_kafka_metadata>?
            let err = rd_kafka_metadata(handle, 1, nil, &metadata, Int32(timeout.milliseconds))
            guard err == RD_KAFKA_RESP_ERR_NO_ERROR, let metadata else {
                return .failure(KafkaError(err, context: "read cluster metadata"))
            }
            defer { rd_kafka_metadata_destroy(metadata) }
            var topics: [String: TopicState] = [:]
            for index in 0..<Int(metadata.pointee.topic_cnt) {
                let topic = metadata.pointee.topics[index]
                guard topic.err == RD_KAFKA_RESP_ERR_NO_ERROR else { continue }
                let partitions = (0..<Int(topic.partition_cnt)).map { topic.partitions[$0].replica_cnt }
                topics[String(cString: topic.topic)] = TopicState(partitions: topic.partition_cnt, replicas: partitions.min() ?? 0)
            }
            return .success(topics)
        }
        guard let result else { throw KafkaError.closed("admin client") }
        return try result.get()
    }

    /// The configuration of `names` as the brokers report it (DescribeConfigs), or nil when they do not answer it
    /// (the embedded broker does not).
    package func topicConfigs(_ names: [String]) async throws -> [String: [String: String]]? {
        guard !names.isEmpty else { return [:] }
        let result = await runtime.blockingCall { handle in Self.describeConfigs(names, handle: handle, timeoutMs: 10_000) }
        guard let result else { throw KafkaError.closed("admin client") }
        return try result.get()
    }

    private static func describeConfigs(_ names: [String], handle: OpaquePointer, timeoutMs: Int32)
        -> Result<[String: [String: String]]?, KafkaError>
    {
        // One broker's own configuration is asked too: librdkafka then sends the request to that broker instead of
        // waiting for the controller, which the embedded broker never names (a real broker answers for topics from
        // any broker, KIP-133). A broker that does not offer DescribeConfigs then fails it at once.
        var metadata: UnsafePointer<rd_kafka_metadata>?
        let err = rd_kafka_metadata(handle, 0, nil, &metadata, timeoutMs)
        guard err == RD_KAFKA_RESP_ERR_NO_ERROR, let metadata else {
            return .failure(KafkaError(err, context: "read cluster metadata"))
        }
        let broker = metadata.pointee.broker_cnt > 0 ? metadata.pointee.brokers[0].id : nil
        rd_kafka_metadata_destroy(metadata)
        var resources: [OpaquePointer?] = names.map { rd_kafka_ConfigResource_new(RD_KAFKA_RESOURCE_TOPIC, $0) }
        if let broker { resources.append(rd_kafka_ConfigResource_new(RD_KAFKA_RESOURCE_BROKER, String(broker))) }
        defer { for resource in resources { rd_kafka_ConfigResource_destroy(resource) } }
        return adminRequest(handle, RD_KAFKA_ADMIN_OP_DESCRIBECONFIGS, name: "DescribeConfigs", timeoutMs: timeoutMs) { options, queue in
            resources.withUnsafeMutableBufferPointer { buffer in
                rd_kafka_DescribeConfigs(handle, buffer.baseAddress, buffer.count, options, queue)
            }
        } read: { event in
            configs(in: event)
        }
    }

    /// The topics' configurations in a DescribeConfigs answer (nil: the brokers do not offer DescribeConfigs).
    private static func configs(in event: OpaquePointer) -> Result<[String: [String: String]]?, KafkaError> {
        let eventErr = rd_kafka_event_error(event)
        if Self.unanswered.contains(eventErr) { return .success(nil) }
        if eventErr != RD_KAFKA_RESP_ERR_NO_ERROR { return .failure(KafkaError(eventErr, context: "DescribeConfigs")) }
        guard let described = rd_kafka_event_DescribeConfigs_result(event) else {
            return .failure(KafkaError(code: .other, reason: "DescribeConfigs answered with an unexpected event"))
        }
        var count = 0
        guard let results = rd_kafka_DescribeConfigs_result_resources(described, &count) else { return .success([:]) }
        var configs: [String: [String: String]] = [:]
        for index in 0..<count {
            guard let resource = results[index], rd_kafka_ConfigResource_type(resource) == RD_KAFKA_RESOURCE_TOPIC else { continue }
            let name = String(cString: rd_kafka_ConfigResource_name(resource))
            let resourceErr = rd_kafka_ConfigResource_error(resource)
            if Self.unanswered.contains(resourceErr) { return .success(nil) }
            if resourceErr != RD_KAFKA_RESP_ERR_NO_ERROR {
                return .failure(KafkaError(resourceErr, context: "DescribeConfigs of \(name)"))
            }
            var entryCount = 0
            guard let entries = rd_kafka_ConfigResource_configs(resource, &entryCount) else { continue }
            var values: [String: String] = [:]
            for entryIndex in 0..<entryCount {
                guard let entry = entries[entryIndex], let value = rd_kafka_ConfigEntry_value(entry) else { continue }
                values[String(cString: rd_kafka_ConfigEntry_name(entry))] = String(cString: value)
            }
            configs[name] = values
        }
        return .success(configs)
    }

    /// DescribeConfigs errors that say the brokers do not offer it, rather than that it failed.
    static let unanswered: Set<rd_kafka_resp_err_t> = [RD_KAFKA_RESP_ERR__UNSUPPORTED_FEATURE, RD_KAFKA_RESP_ERR_UNSUPPORTED_VERSION]

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
        return adminRequest(handle, RD_KAFKA_ADMIN_OP_CREATETOPICS, name: "CreateTopics", timeoutMs: timeoutMs) { options, queue in
            _ = rd_kafka_AdminOptions_set_operation_timeout(options, timeoutMs, &errstr, 512)
            newTopics.withUnsafeMutableBufferPointer { buffer in
                rd_kafka_CreateTopics(handle, buffer.baseAddress, buffer.count, options, queue)
            }
        } read: { event in
            created(in: event)
        }
    }

    /// A CreateTopics answer: success, or the first topic refused for another reason than already existing.
    private static func created(in event: OpaquePointer) -> Result<Void, KafkaError> {
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

    /// One admin request: its queue and options (with the request timeout), sent by `send`, and its answer's event
    /// read by `read`, then destroyed.
    private static func adminRequest<T>(
        _ handle: OpaquePointer, _ operation: rd_kafka_admin_op_t, name: String, timeoutMs: Int32,
        send: (_ options: OpaquePointer?, _ queue: OpaquePointer?) -> Void,
        read: (_ event: OpaquePointer) -> Result<T, KafkaError>
    ) -> Result<T, KafkaError> {
        var errstr = [CChar](repeating: 0, count: 512)
        let queue = rd_kafka_queue_new(handle)
        defer { rd_kafka_queue_destroy(queue) }
        let options = rd_kafka_AdminOptions_new(handle, operation)
        defer { rd_kafka_AdminOptions_destroy(options) }
        _ = rd_kafka_AdminOptions_set_request_timeout(options, timeoutMs, &errstr, 512)
        send(options, queue)
        guard let event = rd_kafka_queue_poll(queue, timeoutMs + 1000) else {
            return .failure(KafkaError(code: .timedOut, reason: "\(name) got no answer in \(timeoutMs) ms"))
        }
        defer { rd_kafka_event_destroy(event) }
        return read(event)
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
