import Foundation
import Shared

extension PendingOutput {
    /// A record that could not be processed, to `herald.dlq` under its own key, with the service that gave up on it
    /// and why (`herald tail herald.dlq` reads them). Every dead letter of the services is made here.
    package static func deadLetter(_ record: KafkaRecord, service: String, reason: String, at: Date = Date()) -> PendingOutput {
        let letter = DeadLetter(service: service, reason: reason, record: record, at: at)
        return PendingOutput(topic: HeraldTopic.dlq.name, key: record.keyString ?? "", value: (try? Wire.encode(letter)) ?? [])
    }
}
