import Logging
import Shared
import Testing

@Suite("Environment configuration")
struct ConfigTests {
    static let base = ["KAFKA_BOOTSTRAP_SERVERS": "kafka-1:9092,kafka-2:9092"]

    @Test("defaults when only the bootstrap list is set")
    func defaults() throws {
        let ingest = try IngestConfig.fromEnvironment(Self.base)
        #expect(ingest.common.kafka.bootstrapServers == "kafka-1:9092,kafka-2:9092")
        #expect(ingest.common.httpPort == 8080)
        #expect(ingest.common.httpHost == "0.0.0.0")
        #expect(ingest.common.logLevel == .info)
        #expect(ingest.common.logFormat == .json)
        #expect(ingest.common.topicPartitions == 12)
        #expect(ingest.common.topicReplication == -1)
        #expect(ingest.common.createTopics)
        #expect(ingest.produceTimeout == .seconds(10))
        let orchestrator = try OrchestratorConfig.fromEnvironment(Self.base)
        #expect(orchestrator.common.httpPort == 8081)
        #expect(orchestrator.consumerGroup == "herald-orchestrator")
        #expect(orchestrator.dataDirectory == "data/orchestrator")
        let notifier = try NotifierConfig.fromEnvironment(Self.base)
        #expect(notifier.common.httpPort == 8082)
        #expect(notifier.consumerGroup == "herald-notifier")
    }

    @Test(
        "each invalid value is refused naming its variable",
        arguments: [
            ("KAFKA_BOOTSTRAP_SERVERS", ""),
            ("KAFKA_BOOTSTRAP_SERVERS", "kafka"),
            ("KAFKA_BOOTSTRAP_SERVERS", ":9092"),
            ("KAFKA_BOOTSTRAP_SERVERS", "kafka:0"),
            ("KAFKA_BOOTSTRAP_SERVERS", "kafka:65536"),
            ("KAFKA_BOOTSTRAP_SERVERS", "kafka:9092,"),
            ("HERALD_HTTP_PORT", "-1"),
            ("HERALD_HTTP_PORT", "65536"),
            ("HERALD_HTTP_PORT", "80a"),
            ("HERALD_LOG_LEVEL", "verbose"),
            ("HERALD_LOG_FORMAT", "xml"),
            ("HERALD_TOPIC_PARTITIONS", "0"),
            ("HERALD_TOPIC_PARTITIONS", "10001"),
            ("HERALD_TOPIC_REPLICATION", "-2"),
            ("HERALD_CREATE_TOPICS", "maybe"),
            ("HERALD_PRODUCE_TIMEOUT_MS", "99"),
            ("HERALD_PRODUCE_TIMEOUT_MS", "300001"),
            ("KAFKA_ENABLE_IDEMPOTENCE", "false"),
            ("KAFKA_ACKS", "1"),
            ("KAFKA_GROUP_ID", "x"),
        ])
    func refused(variable: String, value: String) {
        var environment = Self.base
        environment[variable] = value
        if variable == "KAFKA_BOOTSTRAP_SERVERS" && value.isEmpty { environment.removeValue(forKey: variable) }
        let error = #expect(throws: ConfigError.self) { try IngestConfig.fromEnvironment(environment) }
        #expect(error?.variable == variable)
        #expect(error?.description.hasPrefix("configuration error: \(variable): ") == true)
    }

    @Test(
        "edges that are accepted",
        arguments: [
            ("HERALD_HTTP_PORT", "0"), ("HERALD_HTTP_PORT", "65535"), ("HERALD_TOPIC_PARTITIONS", "1"),
            ("HERALD_TOPIC_PARTITIONS", "10000"), ("HERALD_PRODUCE_TIMEOUT_MS", "100"),
            ("HERALD_PRODUCE_TIMEOUT_MS", "300000"), ("HERALD_CREATE_TOPICS", "no"), ("HERALD_LOG_LEVEL", "TRACE"),
            ("KAFKA_BOOTSTRAP_SERVERS", "[::1]:9092"),
        ])
    func accepted(variable: String, value: String) throws {
        var environment = Self.base
        environment[variable] = value
        _ = try IngestConfig.fromEnvironment(environment)
    }

    @Test("KAFKA_ variables pass through as librdkafka keys")
    func kafkaOverrides() throws {
        var environment = Self.base
        environment["KAFKA_SECURITY_PROTOCOL"] = "SASL_SSL"
        environment["KAFKA_SASL_MECHANISMS"] = "PLAIN"
        let config = try IngestConfig.fromEnvironment(environment)
        #expect(config.common.kafka.overrides == ["security.protocol": "SASL_SSL", "sasl.mechanisms": "PLAIN"])
    }

    @Test("unknown HERALD_ variables are reported, others ignored")
    func unknownVariables() throws {
        var environment = Self.base
        environment["HERALD_HTTP_PROT"] = "1"
        environment["HOME"] = "/root"
        let config = try OrchestratorConfig.fromEnvironment(environment)
        #expect(config.common.unknownVariables == ["HERALD_HTTP_PROT"])
        // A variable of another service is unknown to this one.
        environment["HERALD_DATA_DIR"] = "/data"
        #expect(try IngestConfig.fromEnvironment(environment).common.unknownVariables == ["HERALD_DATA_DIR", "HERALD_HTTP_PROT"])
    }
}
