import Shared

/// Where the outbox and the changelog go: the Kafka producer in the services, a fake in tests. `publish` returns once
/// every record is acknowledged, with where each was stored (in order), and throws when one is not (the outbox keeps
/// it for the next try).
package protocol OutboxPublisher: Sendable {
    @discardableResult
    func publish(_ records: [KafkaOutgoingRecord]) async throws -> [KafkaDeliveryReport]
}

extension KafkaProducer: OutboxPublisher {
    @discardableResult
    package func publish(_ records: [KafkaOutgoingRecord]) async throws -> [KafkaDeliveryReport] {
        try await send(records)
    }
}
