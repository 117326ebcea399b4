import Shared

/// Where accepted writes go. Returns only when every record is stored, else throws.
protocol RecordSink: Sendable {
    func store(_ records: [IngestRecord], requestID: String) async throws
}

/// The Kafka sink: every record to `herald.ingest`, keyed by profile, all sent at once, acknowledged by the broker
/// (acks=all) before `store` returns.
struct KafkaRecordSink: RecordSink {
    let producer: KafkaProducer

    func store(_ records: [IngestRecord], requestID: String) async throws {
        try await withThrowingTaskGroup(of: Void.self) { group in
            for record in records {
                group.addTask {
                    try await producer.send(
                        KafkaOutgoingRecord(
                            topic: HeraldTopic.ingest.name, key: record.key, value: record.value,
                            headers: [KafkaHeader("herald-op", record.op.rawValue), KafkaHeader("herald-request-id", requestID)]))
                }
            }
            // Wait for every acknowledgement; the first failure is reported once all have finished, so the answer
            // never comes while a record is still in flight.
            var firstError: (any Error)?
            while let result = await group.nextResult() {
                if case .failure(let error) = result, firstError == nil { firstError = error }
            }
            if let firstError { throw firstError }
        }
    }
}
