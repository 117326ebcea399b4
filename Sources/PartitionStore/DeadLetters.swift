import Foundation
import Logging
import Metrics
import Shared

extension PendingOutput {
    /// A record that could not be processed, to `herald.dlq` under its own key, with the service that gave up on it
    /// and why (`herald tail herald.dlq` reads them). Every dead letter of the services is made here.
    package static func deadLetter(_ record: KafkaRecord, service: String, reason: String, at: Date = Date()) -> PendingOutput {
        let letter = DeadLetter(service: service, reason: reason, record: record, at: at)
        return PendingOutput(topic: HeraldTopic.dlq.name, key: record.keyString ?? "", value: (try? Wire.encode(letter)) ?? [])
    }
}

extension KafkaOutgoingRecord {
    /// What goes to `herald.dlq` instead of an output that can never be produced (`error`: too large, invalid): a
    /// dead letter naming the output's topic and key, its size and why, without its value, so that the partition's
    /// other outputs go on (`herald_outputs_unproducible_total{topic}`).
    package func unproducibleStub(service: String, error: KafkaError, logger: Logger, at: Date = Date()) -> KafkaOutgoingRecord {
        let size = value?.count ?? 0
        logger.error(
            "output can never be produced; a dead letter stands in for it and the partition goes on",
            metadata: ["topic": .string(topic), "bytes": "\(size)", "error": .string(error.reason)])
        Counter(label: "herald_outputs_unproducible_total", dimensions: [("topic", topic)]).increment()
        let original = KafkaRecord(topic: topic, partition: partition ?? -1, offset: -1, key: key, value: nil, headers: headers)
        let letter = DeadLetter(
            service: service, reason: "not produced: \(error.reason); its value (\(size) bytes) is not kept", record: original, at: at)
        return KafkaOutgoingRecord(topic: HeraldTopic.dlq.name, key: key, value: (try? Wire.encode(letter)) ?? [])
    }
}
