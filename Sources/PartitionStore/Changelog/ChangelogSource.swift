import Shared

/// Where a partition's changelog is read back from: the broker in the services, an in-memory log in tests.
package protocol ChangelogSource: Sendable {
    /// The partition's first kept offset and its end (the offset the next record will get).
    func watermarks(_ partition: TopicPartition) async throws -> (low: Int64, high: Int64)
    /// Hands `body` the records from `start` (or the first kept) up to `end` (exclusive), in offset order, in chunks.
    func read(_ partition: TopicPartition, from start: Int64, until end: Int64, _ body: ([KafkaRecord]) async throws -> Void)
        async throws
}

/// What a partition database needs to keep a changelog: the topic and where to read it back.
package struct ChangelogSettings: Sendable {
    /// `herald.state.<service>`, with the same partition count as the topics the service reads.
    package var topic: String
    package var source: any ChangelogSource
    /// Tables a migration renamed (`ChangelogCapture.renameTable`), old name → new: a restore applies a record written
    /// under the old name to the table's new name (a changelog written only by a version before the rename).
    package var renamedTables: [String: String]

    package init(topic: String, source: any ChangelogSource, renamedTables: [String: String] = [:]) {
        self.topic = topic
        self.source = source
        self.renamedTables = renamedTables
    }
}

extension KafkaPartitionReader: ChangelogSource {
    package func watermarks(_ partition: TopicPartition) async throws -> (low: Int64, high: Int64) {
        try await watermarks(partition, timeout: .seconds(10))
    }

    package func read(
        _ partition: TopicPartition, from start: Int64, until end: Int64, _ body: ([KafkaRecord]) async throws -> Void
    ) async throws {
        try await read(partition, from: start, until: end, idleTimeout: .seconds(30), body)
    }
}
