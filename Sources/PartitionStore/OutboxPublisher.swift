import Shared

/// Where the outbox goes: the Kafka producer in the services, a fake in tests. `publish` returns once every record is
/// acknowledged, and throws when one is not (the outbox keeps it for the next try).
package protocol OutboxPublisher: Sendable {
    func publish(_ records: [KafkaOutgoingRecord]) async throws
}

extension KafkaProducer: OutboxPublisher {
    package func publish(_ records: [KafkaOutgoingRecord]) async throws {
        _ = try await send(records)
    }
}
