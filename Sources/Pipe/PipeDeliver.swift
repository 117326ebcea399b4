import CurlClient
import Foundation
import Hummingbird
import Logging
import ServiceLifecycle
import ServiceSupport
import Shared

/// The pipe's second consumer hop, where the notifier delivers: each send of `herald.sends.push` is posted to APNs
/// over HTTP/2 with the headers the APNs provider sends (all of a batch at once, on the notifier's client), and each
/// answer becomes a `sent` report on `herald.deliveries` with the send's times, as the notifier's ledger reports it.
enum PipeDeliver {
    static func services(_ context: ServiceContext<PipeConfig>) async throws -> [any Service] {
        let (consumer, producer) = try await context.hop(from: .sendsPush, to: .deliveries)
        let driver = CurlDriver(caFile: context.config.caFile)
        let (url, logger) = (context.config.apnsURL, context.logger)
        let consuming = KafkaConsumerService(consumer: consumer) { batch in
            for record in batch.records {
                guard let value = record.value, let send = try? JSONParser.parse(value) else { continue }
                Task { await deliver(send, driver: driver, url: url, producer: producer, logger: logger) }
            }
        }
        let http = ServiceMain.httpApplication(
            router: Router(context: ServiceRequestContext.self), context: context, service: "pipe-deliver",
            checks: [HealthCheck("group") { consumer.hasJoinedGroup }])
        return [producer, consuming, http]
    }

    static func deliver(_ send: JSONValue, driver: CurlDriver, url: String, producer: KafkaProducer, logger: Logger) async {
        guard let id = send["id"]?.stringValue, let token = send["token"]?.stringValue else { return }
        let payload = JSONValue.object([
            JSONMember("aps", .object([JSONMember("alert", .object([
                JSONMember("title", .string("Thanks")), JSONMember("body", .string("You tapped it")),
            ]))])),
            JSONMember("com.herald", .object([JSONMember("i", .string(id))])),
        ])
        let request = CurlClient.HTTPRequest(
            url: "\(url)/3/device/\(token)",
            headers: [
                ("authorization", "bearer pipe.pipe.pipe"), ("apns-topic", "com.example.demo"), ("apns-push-type", "alert"),
                ("apns-priority", "10"), ("apns-expiration", "0"), ("apns-collapse-id", id), ("content-type", "application/json"),
            ],
            body: payload.serialized, http2: true)
        struct Refused: Error { var answer: String }
        let delivered = await retrying {
            switch await driver.perform(request) {
            case .success(let response) where response.status == 200: return
            case .success(let response): throw Refused(answer: "status \(response.status)")
            case .failure(let error): throw Refused(answer: "\(error)")
            }
        }
        guard delivered else {
            logger.error("pipe delivery failed", metadata: ["send_id": .string(id)])
            return
        }
        var report = DeliveryReport(
            id: "\(id)/sent", sendID: id, project: "demo", customID: send["custom_id"]?.stringValue, channel: .push,
            outcome: .sent, at: Date())
        report.triggeredAt = send["triggered_at"]?.timeValue
        report.decidedAt = send["decided_at"]?.timeValue
        report.provider = "apns"
        let record = try? KafkaOutgoingRecord(topic: HeraldTopic.deliveries.name, key: Array(report.key.utf8), value: Wire.encode(report))
        let produced = await retrying { if let record { try await producer.send(record) } }
        if record == nil || !produced { logger.error("report not produced", metadata: ["send_id": .string(id)]) }
    }
}
