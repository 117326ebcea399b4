import Foundation
import Hummingbird
import Logging
import ServiceLifecycle
import ServiceSupport
import Shared

/// The pipe's first consumer hop, where the orchestrator decides: each event of `herald.ingest` becomes one send on
/// `herald.sends.push` (its id, the user's push token, the trigger and decision times), produced without holding up
/// the next batch, as the orchestrator's outbox is.
enum PipeDecide {
    static func services(_ context: ServiceContext<PipeConfig>) async throws -> [any Service] {
        let (consumer, producer) = try await context.hop(from: .ingest, to: .sendsPush)
        let logger = context.logger
        let consuming = KafkaConsumerService(consumer: consumer) { batch in
            let decidedAt = Date()
            let sends = batch.records.compactMap { send($0, decidedAt: decidedAt) }
            guard !sends.isEmpty else { return }
            Task {
                let produced = await retrying { _ = try await producer.send(sends) }
                if !produced { logger.error("sends not produced", metadata: ["sends": "\(sends.count)"]) }
            }
        }
        let http = ServiceMain.httpApplication(
            router: Router(context: ServiceRequestContext.self), context: context, service: "pipe-decide",
            checks: [HealthCheck("group") { consumer.hasJoinedGroup }])
        return [producer, consuming, http]
    }

    static func send(_ record: KafkaRecord, decidedAt: Date) -> KafkaOutgoingRecord? {
        guard let value = record.value, let event = try? JSONParser.parse(value),
            let customID = event["custom_id"]?.stringValue, let id = event["event"]?["id"]?.stringValue,
            let user = Int(customID.dropFirst())
        else { return nil }
        let send = JSONValue.object([
            JSONMember("id", .string(id)), JSONMember("custom_id", .string(customID)),
            JSONMember("token", .string(String(format: "%064x", user))),
            JSONMember("triggered_at", event["received_at"] ?? .null), JSONMember("decided_at", .time(decidedAt)),
        ])
        return KafkaOutgoingRecord(topic: HeraldTopic.sendsPush.name, key: record.key, value: send.serialized)
    }
}
