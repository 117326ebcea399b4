/// A topic and one of its partitions.
package struct TopicPartition: Hashable, Sendable, CustomStringConvertible, Comparable {
    package var topic: String
    package var partition: Int32

    package init(_ topic: String, _ partition: Int32) {
        self.topic = topic
        self.partition = partition
    }

    package var description: String { "\(topic)[\(partition)]" }

    package static func < (lhs: TopicPartition, rhs: TopicPartition) -> Bool {
        (lhs.topic, lhs.partition) < (rhs.topic, rhs.partition)
    }
}

/// A record header. A header may have no value (Kafka allows null header values).
package struct KafkaHeader: Hashable, Sendable {
    package var name: String
    package var value: [UInt8]?

    package init(_ name: String, _ value: [UInt8]?) {
        self.name = name
        self.value = value
    }

    package init(_ name: String, _ value: String) {
        self.init(name, Array(value.utf8))
    }
}

/// A record to produce. A `nil` value is a tombstone (deletes the key from a compacted topic).
package struct KafkaOutgoingRecord: Sendable {
    package var topic: String
    package var key: [UInt8]?
    package var value: [UInt8]?
    package var headers: [KafkaHeader]
    /// An explicit partition; `nil` lets the partitioner pick one from the key.
    package var partition: Int32?

    package init(
        topic: String,
        key: [UInt8]?,
        value: [UInt8]?,
        headers: [KafkaHeader] = [],
        partition: Int32? = nil
    ) {
        self.topic = topic
        self.key = key
        self.value = value
        self.headers = headers
        self.partition = partition
    }

    package init(topic: String, key: String?, value: [UInt8]?, headers: [KafkaHeader] = []) {
        self.init(topic: topic, key: key.map { Array($0.utf8) }, value: value, headers: headers)
    }
}

/// Where the broker stored a produced record.
package struct KafkaDeliveryReport: Sendable, Hashable {
    package var topic: String
    package var partition: Int32
    package var offset: Int64

    package init(topic: String, partition: Int32, offset: Int64) {
        self.topic = topic
        self.partition = partition
        self.offset = offset
    }
}

/// A consumed record.
package struct KafkaRecord: Sendable, Hashable {
    package var topic: String
    package var partition: Int32
    package var offset: Int64
    package var key: [UInt8]?
    package var value: [UInt8]?
    package var headers: [KafkaHeader]
    /// The record's timestamp in milliseconds since the epoch, when the broker supplied one.
    package var timestampMs: Int64?

    package init(
        topic: String, partition: Int32, offset: Int64, key: [UInt8]?, value: [UInt8]?, headers: [KafkaHeader] = [],
        timestampMs: Int64? = nil
    ) {
        self.topic = topic
        self.partition = partition
        self.offset = offset
        self.key = key
        self.value = value
        self.headers = headers
        self.timestampMs = timestampMs
    }

    package var topicPartition: TopicPartition { TopicPartition(topic, partition) }
    package var keyString: String? { key.map { String(decoding: $0, as: UTF8.self) } }
    package var isTombstone: Bool { value == nil }

    package func header(_ name: String) -> [UInt8]? {
        headers.last(where: { $0.name == name })?.value
    }
}

/// A batch handed to a consumer's caller: records in the order they were fetched; within a partition in offset order.
package struct KafkaBatch: Sendable {
    package var records: [KafkaRecord]

    package init(records: [KafkaRecord]) { self.records = records }

    /// Per partition, the offset after the batch's last record: where reading goes on once the batch is applied.
    package var nextOffsets: [TopicPartition: Int64] {
        var next: [TopicPartition: Int64] = [:]
        for record in records { next[record.topicPartition] = max(next[record.topicPartition] ?? 0, record.offset + 1) }
        return next
    }

    /// The records grouped per partition, each group in offset order: the unit a stateful service applies in one
    /// transaction.
    package var byPartition: [(TopicPartition, [KafkaRecord])] {
        var groups: [TopicPartition: [KafkaRecord]] = [:]
        for record in records { groups[record.topicPartition, default: []].append(record) }
        return groups.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }
    }
}

/// Where a consumer starts reading a partition it was assigned.
package enum KafkaStartOffset: Sendable, Hashable {
    /// The offset the group committed in Kafka, else `auto.offset.reset` (earliest).
    case committed
    /// An offset the caller stored itself (for instance in the partition's SQLite database with the state).
    case offset(Int64)
    case beginning
    case end
    /// Assigned but not read: paused at once, until the listener resumes it at an offset
    /// (`KafkaConsumer.resume(_:at:)`), for instance once the partition's database can be opened.
    case held
}
