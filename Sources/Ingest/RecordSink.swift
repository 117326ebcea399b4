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
        _ = try await producer.send(
            records.map { record in
                KafkaOutgoingRecord(
                    topic: HeraldTopic.ingest.name, key: record.key, value: record.value, headers: record.headers(requestID: requestID))
            })
    }
}
