import CRdKafka
import Logging

/// A Kafka-protocol cluster in this process, built on librdkafka's mock cluster: N brokers on loopback that every
/// client (and `kcat`) reaches through `bootstrapServers`. Keeps everything in memory. For development and tests.
package final class EmbeddedKafkaCluster: Sendable {
    package let bootstrapServers: String
    package let brokerIDs: [Int32]
    private let runtime: RdKafkaRuntime
    private let cluster: MockClusterPointer

    /// The mock cluster's pointer; the mock API is thread-safe (calls are handed to its own thread).
    private struct MockClusterPointer: @unchecked Sendable { let pointer: OpaquePointer }

    package init(brokers: Int = 3, logger: Logger) throws(KafkaError) {
        guard (1...32).contains(brokers) else {
            throw KafkaError(code: .configuration, reason: "brokers must be between 1 and 32, got \(brokers)")
        }
        // The mock cluster lives inside a (never used) producer handle, whose thread relays the mock's logs.
        let runtime = try RdKafkaRuntime(
            type: RD_KAFKA_PRODUCER,
            // The host handle never connects anywhere: its "no bootstrap.servers" notice is noise.
            configuration: RdKafkaConfiguration([("client.id", "herald-devbroker"), ("log_level", "4")]),
            events: 0,
            logger: logger,
            onEvent: { _, _ in }
        )
        guard let cluster = rd_kafka_mock_cluster_new(runtime.handle, Int32(brokers)) else {
            Task { await runtime.stop() }
            throw KafkaError(code: .other, reason: "rd_kafka_mock_cluster_new failed")
        }
        self.runtime = runtime
        self.cluster = MockClusterPointer(pointer: cluster)
        self.bootstrapServers = String(cString: rd_kafka_mock_cluster_bootstraps(cluster))
        self.brokerIDs = (1...Int32(brokers)).map { $0 }
    }

    /// Creates a topic (replicated on up to 3 brokers). Creating an existing topic changes nothing.
    package func createTopic(_ spec: TopicSpec) throws(KafkaError) {
        let replicas = spec.replicationFactor > 0 ? spec.replicationFactor : Int32(min(3, brokerIDs.count))
        let err = rd_kafka_mock_topic_create(cluster.pointer, spec.name, spec.partitions, replicas)
        if err != RD_KAFKA_RESP_ERR_NO_ERROR, err != RD_KAFKA_RESP_ERR_TOPIC_ALREADY_EXISTS {
            throw KafkaError(err, context: "create topic \(spec.name)")
        }
    }

    package func createTopics(_ specs: [TopicSpec]) throws(KafkaError) {
        for spec in specs { try createTopic(spec) }
    }

    /// Disconnects a broker and refuses new connections to it, until `setBrokerUp`.
    package func setBrokerDown(_ id: Int32) throws(KafkaError) {
        let err = rd_kafka_mock_broker_set_down(cluster.pointer, id)
        if err != RD_KAFKA_RESP_ERR_NO_ERROR { throw KafkaError(err, context: "set broker \(id) down") }
    }

    package func setBrokerUp(_ id: Int32) throws(KafkaError) {
        let err = rd_kafka_mock_broker_set_up(cluster.pointer, id)
        if err != RD_KAFKA_RESP_ERR_NO_ERROR { throw KafkaError(err, context: "set broker \(id) up") }
    }

    /// Stops the brokers and frees the cluster.
    package func shutdown() async {
        let cluster = cluster
        _ = await runtime.blockingCall { _ in rd_kafka_mock_cluster_destroy(cluster.pointer) }
        await runtime.stop()
    }
}
