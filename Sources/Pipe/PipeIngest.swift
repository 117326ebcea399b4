import Foundation
import Hummingbird
import ServiceLifecycle
import ServiceSupport
import Shared

/// The pipe's HTTP in: `POST /v1/profiles/update` with a JSON array of `{identifiers: {custom_id}, events: [...]}`,
/// one record per event to `herald.ingest`, keyed by profile, answered once the broker acknowledged them (as the
/// ingest answers). The body is parsed, to find the keys; nothing is validated.
enum PipeIngest {
    static func services(_ context: ServiceContext<PipeConfig>) async throws -> [any Service] {
        let producer = try KafkaProducer(
            configuration: KafkaProducerConfiguration(client: context.common.kafka, clientID: context.common.instanceID),
            logger: context.logger)
        await producer.prepare(topics: [.ingest])
        let router = Router(context: ServiceRequestContext.self)
        router.middlewares.add(MetricsMiddleware())
        router.post("/v1/profiles/update") { request, _ -> Response in
            let body = try await request.body.collect(upTo: 1 << 20)
            guard let records = try? records(Array(body.readableBytesView), receivedAt: Date()) else {
                return Response(status: .badRequest)
            }
            _ = try await producer.send(records)
            return Response(status: .ok, body: ResponseBody(byteBuffer: ByteBuffer(string: #"{"message":"success"}"#)))
        }
        let http = ServiceMain.httpApplication(
            router: router, context: context, service: "pipe-ingest", checks: [HealthCheck("kafka") { await producer.brokersReachable() }])
        return [producer, http]
    }

    /// One record per event: its JSON, with the time it was received.
    static func records(_ body: [UInt8], receivedAt: Date) throws -> [KafkaOutgoingRecord] {
        guard case .array(let updates) = try JSONParser.parse(body) else { return [] }
        var records: [KafkaOutgoingRecord] = []
        for update in updates {
            guard let customID = update["identifiers"]?["custom_id"]?.stringValue, case .array(let events)? = update["events"] else {
                continue
            }
            let key = Array(ProfileKey.profile("demo", customID).utf8)
            for event in events {
                let value = JSONValue.object([
                    JSONMember("custom_id", .string(customID)), JSONMember("event", event),
                    JSONMember("received_at", .time(receivedAt)),
                ])
                records.append(KafkaOutgoingRecord(topic: HeraldTopic.ingest.name, key: key, value: value.serialized))
            }
        }
        return records
    }
}
