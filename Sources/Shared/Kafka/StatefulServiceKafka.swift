import Logging

/// The Kafka clients both stateful services (the orchestrator and the notifier) build the same way from their
/// configuration: the consumer of their co-partitioned topics, and the reader that restores a partition's changelog.
extension StatefulServiceConfig {
    /// The consumer of `topics`, co-partitioned (partition n of each topic goes with partition n of the first: one
    /// database per number), in the service's group, its progress copied to `<group>.offsets` for operators.
    package func consumerConfiguration(topics: [HeraldTopic]) -> KafkaConsumerConfiguration {
        var configuration = KafkaConsumerConfiguration(
            client: common.kafka, clientID: common.instanceID, groupID: consumerGroup, topics: topics.map(\.name))
        configuration.sessionTimeout = sessionTimeout
        configuration.coPartitioned = true
        configuration.progressGroup = "\(consumerGroup).offsets"
        return configuration
    }

    /// Reads a partition's changelog when the partition arrives without its database (`<group>.restore`).
    package func restoreReader(logger: Logger) throws(KafkaError) -> KafkaPartitionReader {
        try KafkaPartitionReader(client: common.kafka, clientID: common.instanceID, groupID: "\(consumerGroup).restore", logger: logger)
    }
}
