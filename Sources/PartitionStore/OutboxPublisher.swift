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

extension OutboxPublisher {
    /// Publishes `records`; one that can never be produced as it is (`KafkaError.isPermanentForRecord`: too large,
    /// invalid) is replaced by `stub(record, error)`, so that it does not hold the records behind it forever. Returns,
    /// in order, each record's report, or nil where its stub went instead. Any other error is thrown (the caller tries
    /// again later). To find the culprits the records are published again one at a time: those of the batch the broker
    /// had already acknowledged go twice, which every output allows (consumers dedupe, as after a crash).
    func publishOrStub(
        _ records: [KafkaOutgoingRecord], stub: (KafkaOutgoingRecord, KafkaError) -> KafkaOutgoingRecord
    ) async throws -> [KafkaDeliveryReport?] {
        do {
            return try await publish(records).map(Optional.some)
        } catch let error as KafkaError where error.isPermanentForRecord {
            var reports: [KafkaDeliveryReport?] = []
            for record in records {
                do {
                    reports.append(try await publish([record]).first)
                } catch let error as KafkaError where error.isPermanentForRecord {
                    try await publish([stub(record, error)])
                    reports.append(nil)
                }
            }
            return reports
        }
    }
}
