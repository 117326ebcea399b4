/// How a service reaches Kafka: the bootstrap list plus librdkafka keys the operator passes through (TLS, SASL, …).
package struct KafkaClientSettings: Sendable, Equatable {
    package var bootstrapServers: String
    /// librdkafka keys set by the operator (`KAFKA_SECURITY_PROTOCOL=SASL_SSL` → `security.protocol`).
    package var overrides: [String: String]

    package init(bootstrapServers: String, overrides: [String: String] = [:]) {
        self.bootstrapServers = bootstrapServers
        self.overrides = overrides
    }

    /// Keys whose values Herald's guarantees depend on; an operator may not override them.
    package static let reservedKeys: Set<String> = [
        "bootstrap.servers", "enable.idempotence", "acks", "enable.auto.commit", "enable.auto.offset.store",
        "partition.assignment.strategy", "group.id", "partitioner", "log.queue", "enable.partition.eof",
        "max.in.flight.requests.per.connection",
    ]

    /// The client's own keys and the operator's (TLS, SASL, …).
    func base(clientID: String) -> RdKafkaConfiguration {
        var configuration = RdKafkaConfiguration([
            ("bootstrap.servers", bootstrapServers),
            ("client.id", clientID),
            ("socket.keepalive.enable", "true"),
        ])
        applyOverrides(to: &configuration)
        return configuration
    }

    /// The operator's keys. The producer and the consumer set them again after their own defaults, so that an
    /// operator's `linger.ms` or `fetch.wait.max.ms` wins (`reservedKeys` are never among them).
    func applyOverrides(to configuration: inout RdKafkaConfiguration) {
        for (key, value) in overrides.sorted(by: { $0.key < $1.key }) { configuration.set(key, value) }
    }
}

/// Producer settings. Idempotence and `acks=all` are always on: a send returns only once every in-sync replica has
/// the record, and retries never duplicate it.
package struct KafkaProducerConfiguration: Sendable {
    package var client: KafkaClientSettings
    package var clientID: String
    /// How long a record may wait for the broker before its send fails with `brokerUnavailable`.
    package var deliveryTimeout: Duration = .seconds(30)
    /// How long a record may wait to be batched with others.
    package var linger: Duration = .milliseconds(5)
    /// Records buffered locally before `send` fails at once with `queueFull`.
    package var maxQueuedRecords: Int = 100_000
    /// The batches' compression (`compression.codec`, e.g. `lz4`); none by default.
    package var compression: String?

    package init(client: KafkaClientSettings, clientID: String) {
        self.client = client
        self.clientID = clientID
    }

    var rdKafka: RdKafkaConfiguration {
        var configuration = client.base(clientID: clientID)
        // Java's partitioner, so that records keyed by Herald and by JVM producers land on the same partition.
        configuration.set("partitioner", "murmur2_random")
        configuration.set("enable.idempotence", "true")
        configuration.set("acks", "all")
        configuration.set("max.in.flight.requests.per.connection", "5")
        configuration.set("message.timeout.ms", String(deliveryTimeout.milliseconds))
        configuration.set("linger.ms", String(linger.milliseconds))
        configuration.set("queue.buffering.max.messages", String(maxQueuedRecords))
        if let compression { configuration.set("compression.codec", compression) }
        client.applyOverrides(to: &configuration)
        return configuration
    }
}

/// Consumer-group member settings. Offsets are never committed or stored automatically: the caller decides.
package struct KafkaConsumerConfiguration: Sendable {
    package var client: KafkaClientSettings
    package var clientID: String
    package var groupID: String
    package var topics: [String]
    /// The partition number is the unit of ownership: the group balances the first topic's partitions, and a member
    /// given partition n of it also reads partition n of every other topic (co-partitioning, as Kafka Streams' tasks).
    /// The stateful services need it: `herald.contacts[n]` with `herald.sends.*[n]`, one database per number.
    package var coPartitioned = false
    /// Where `commitProcessed` copies the offsets after each batch, for operators (`KafkaOffsetReporter`): a group
    /// without members, by convention `<groupID>.offsets`. nil: not copied.
    package var progressGroup: String?
    /// A member that sends no heartbeat for this long is removed from the group and its partitions reassigned.
    package var sessionTimeout: Duration = .seconds(10)
    /// A member whose caller does not ask for the next batch within this long leaves the group.
    package var maxPollInterval: Duration = .seconds(300)
    /// The most records one batch holds.
    package var maxBatchSize: Int = 500
    /// How long a fetch waits at the broker for new records. A real broker answers as soon as records arrive; the
    /// embedded (mock) broker waits the whole time, so this bounds each hop's latency there. 100 ms instead of
    /// librdkafka's 500: at most 10 empty fetches a second per broker when idle.
    package var fetchMaxWait: Duration = .milliseconds(100)

    package init(client: KafkaClientSettings, clientID: String, groupID: String, topics: [String]) {
        self.client = client
        self.clientID = clientID
        self.groupID = groupID
        self.topics = topics
    }

    var rdKafka: RdKafkaConfiguration {
        var configuration = client.base(clientID: clientID)
        configuration.set("group.id", groupID)
        configuration.set("enable.auto.commit", "false")
        configuration.set("enable.auto.offset.store", "false")
        configuration.set("auto.offset.reset", "earliest")
        // Cooperative (incremental) rebalancing: a member joining or leaving moves only the partitions that change
        // owner; the others keep being consumed through the rebalance (KIP-429).
        configuration.set("partition.assignment.strategy", "cooperative-sticky")
        configuration.set("enable.partition.eof", "false")
        configuration.set("session.timeout.ms", String(sessionTimeout.milliseconds))
        configuration.set("heartbeat.interval.ms", String(max(sessionTimeout.milliseconds / 3, 100)))
        configuration.set("max.poll.interval.ms", String(maxPollInterval.milliseconds))
        configuration.set("fetch.wait.max.ms", String(fetchMaxWait.milliseconds))
        // Records fetched ahead of the application: librdkafka's default, 64 MiB, is memory any lagging consumer fills
        // (docs/performance.md, "Memory"); 16 MiB is still some 50,000 records of a few hundred bytes, far more than
        // the batches of 500 the services take.
        configuration.set("queued.max.messages.kbytes", "16384")
        client.applyOverrides(to: &configuration)
        return configuration
    }
}

extension Duration {
    /// Whole milliseconds, rounded down.
    package var milliseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1000 + attoseconds / 1_000_000_000_000_000
    }

    /// Seconds with their fraction, for `Date` arithmetic.
    package var timeInterval: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}
