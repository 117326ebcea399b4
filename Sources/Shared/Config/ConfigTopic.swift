import Foundation
import Logging

/// The records of `herald.config` (compacted, one partition): key `<kind>/<project>/<id>`, value
/// `{"v":1,"kind":"config","file":…,"applied_at":…,"object":{…}}` with the object as written, a tombstone for a
/// removed object.
package enum ConfigTopic {
    package static let partition = TopicPartition(HeraldTopic.config.name, 0)

    package static func value(_ node: ConfigNode, file: String, at: Date) -> [UInt8] {
        JSONValue.object([
            JSONMember("v", .number("1")), JSONMember("kind", .string("config")), JSONMember("file", .string(file)),
            JSONMember("applied_at", .string(WireTime.format(at))), JSONMember("object", node.json),
        ]).serialized
    }

    /// The object of a record and the file it came from.
    package static func object(_ bytes: [UInt8]) throws -> (file: String, node: ConfigNode) {
        let value = try JSONParser.parse(bytes)
        guard value["kind"] == .string("config"), value["v"] == .number("1"), let object = value["object"] else {
            throw WireError(reason: "not a config record of format version 1")
        }
        return (value["file"]?.stringValue ?? "herald.config", ConfigNode(json: object))
    }

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
                objects[key] = try object(bytes)
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
