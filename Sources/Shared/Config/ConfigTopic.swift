import Foundation
import Logging

/// Reading `herald.config` whole: its records (`ConfigRecord`) folded into the current objects by key.
package enum ConfigTopic {
    package static let partition = TopicPartition(HeraldTopic.config.name, 0)

    /// Folds records into the current objects by key (a tombstone or an unreadable value removes the key).
    package static func fold(
        _ records: [KafkaRecord], into objects: inout [String: (file: String, node: ConfigNode)], logger: Logger
    ) {
        for record in records {
            guard let key = record.keyString else { continue }
            guard let bytes = record.value else {
                objects.removeValue(forKey: key)
                continue
            }
            do {
                let read = try ConfigRecord.read(bytes)
                objects[key] = (read.file, read.object)
            } catch {
                logger.warning("unreadable config record ignored", metadata: ["key": "\(key)", "offset": "\(record.offset)", "error": "\(error)"])
                objects.removeValue(forKey: key)
            }
        }
    }

    /// Reads the whole topic once (a consumer of its own group from the beginning up to the end offset).
    package static func readAll(client: KafkaClientSettings, logger: Logger, timeout: Duration = .seconds(30)) async throws
        -> [String: (file: String, node: ConfigNode)]
    {
        let consumer = try KafkaConsumer(
            configuration: KafkaConsumerConfiguration(
                client: client, clientID: "herald-config-reader",
                groupID: "herald-config-reader-\(UUID().uuidString)", topics: [HeraldTopic.config.name]),
            listener: FromBeginningListener(), logger: logger)
        let end = try await consumer.endOffset(partition)
        var objects: [String: (file: String, node: ConfigNode)] = [:]
        if end > 0 {
            let deadline = ContinuousClock.now + timeout
            for try await batch in consumer.batches() {
                fold(batch.records, into: &objects, logger: logger)
                if let last = batch.records.last, last.offset + 1 >= end { break }
                if ContinuousClock.now > deadline { throw KafkaError(code: .timedOut, reason: "reading herald.config") }
            }
        }
        await consumer.close()
        return objects
    }
}
