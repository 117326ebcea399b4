import Foundation
import Shared

/// Reads a compacted topic of one partition from its beginning to where it ends now: each key's latest value (a
/// tombstone removes the key). What `herald webhook list` and `herald suppression list` show.
enum CompactedTopicReader {
    static func latest(_ topic: HeraldTopic, client: KafkaClientSettings) async throws -> [String: [UInt8]] {
        let inspector = try KafkaGroupInspector(client: client, groupID: "herald-cli", logger: ClusterOptions.logger)
        let marks = try await inspector.watermarks(TopicPartition(topic.name, 0))
        await inspector.shutdown()
        guard marks.high > marks.low else { return [:] }
        var values: [String: [UInt8]] = [:]
        let consumer = try KafkaConsumer.wholeTopic(topic, client: client, instanceID: "herald-cli", purpose: "cli", logger: ClusterOptions.logger)
        loop: for try await batch in consumer.batches() {
            for record in batch.records {
                if let key = record.keyString { values[key] = record.value }
                if record.offset + 1 >= marks.high { break loop }
            }
        }
        consumer.stop()
        await consumer.close()
        return values.compactMapValues { $0 }
    }

    /// Produces one record (a tombstone when `value` is nil), waiting for the broker's acknowledgement.
    static func produce(_ topic: HeraldTopic, key: String, value: [UInt8]?, client: KafkaClientSettings) async throws {
        let producer = try KafkaProducer(
            configuration: KafkaProducerConfiguration(client: client, clientID: "herald-cli"), logger: ClusterOptions.logger)
        do {
            _ = try await producer.send([KafkaOutgoingRecord(topic: topic.name, key: Array(key.utf8), value: value)])
        } catch {
            await producer.shutdown()
            throw fail("the broker did not take the record: \(error)")
        }
        await producer.shutdown()
    }
}
