import CompressNIO
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import Metrics
import NIOCore
import ServiceSupport
import Shared

/// The write API's shared machinery: authentication, body parsing, storing, answering.
struct IngestAPI: Sendable {
    let catalog: AppsCatalog
    let sink: any RecordSink
    let maxBodyBytes: Int
    let now: @Sendable () -> Date
    /// How long a body may take to arrive whole (then the connection is closed, logged as 408 `body_timeout`).
    var bodyTimeout: Duration = .seconds(30)
    /// The configured campaigns and journeys, which the trigger endpoints check (none unless given).
    var triggers = TriggerDirectory([:])
    /// The configured actions that write to the profile, which a reported tap applies (none unless given).
    var actions = ActionDirectory()
    /// The rate limits (the router's): an app write's installation is counted once the body names it.
    var limiter: RateLimiter?

    enum KeyKind { case rest, app }

    /// A request body's objects and arrays, while it is parsed: above any rule's own limit (Segment's 2,500 messages
    /// per batch, 200 profile updates, Braze's 75 per array, 20 attributes per event object), so that only a body built
    /// to use memory meets them. Its tree once cost tens of times its bytes: 2 MiB of repeated keys, ~100 MB.
    static let bodyLimits = JSONParser.Limits(members: 1_000, elements: 10_000)

    /// Who is calling. Server endpoints take `Authorization: Bearer <REST key>`, app endpoints `X-Api-Key: <app key>`.
    func authenticate(_ request: Request, as kind: KeyKind) throws(APIError) -> AppsCatalog.Credential {
        let key: String?
        switch kind {
        case .rest:
            key = request.headers.bearerToken
            if key == nil {
                throw .unauthorized("missing_credentials", "this endpoint needs 'Authorization: Bearer <REST API key>'")
            }
        case .app:
            key = request.headers[.apiKey]
            if key == nil { throw .unauthorized("missing_credentials", "this endpoint needs 'X-Api-Key: <app API key>'") }
        }
        guard let key, let credential = catalog.credential(for: key) else {
            throw .unauthorized("invalid_credentials", "unknown API key")
        }
        switch (kind, credential) {
        case (.rest, .rest), (.app, .app): return credential
        case (.rest, .app):
            throw APIError(status: .forbidden, code: "wrong_key_kind", message: "this endpoint takes a project REST API key, not an app key")
        case (.app, .rest):
            throw APIError(status: .forbidden, code: "wrong_key_kind", message: "this endpoint takes an app API key, not a REST key")
        case (_, .source):
            throw APIError(
                status: .forbidden, code: "wrong_key_kind", message: "a Segment write key writes only to Segment's API (/v1/batch, /v1/track, …)")
        }
    }

    /// The request body as JSON: 413 over the size limit, 400 saying where it is malformed; a body that has not arrived
    /// whole within `bodyTimeout` closes the connection (logged as 408 `body_timeout`). With `acceptsGzip` (Segment's
    /// endpoints), a `Content-Encoding: gzip` body is inflated first, bounded by the same limit; another encoding is 415.
    func body(_ request: Request, context: IngestContext, acceptsGzip: Bool = false) async throws -> JSONValue {
        var gzip = false
        if acceptsGzip, let encoding = request.headers[.contentEncoding]?.lowercased(), encoding != "identity" {
            guard encoding == "gzip" else {
                throw APIError(status: .unsupportedMediaType, code: "unsupported_encoding", message: "bodies are plain or gzip")
            }
            gzip = true
        }
        var buffer: ByteBuffer
        do {
            buffer = try await BodyDeadline.collect(request, upTo: maxBodyBytes, within: bodyTimeout, channel: context.channel)
        } catch is NIOTooManyBytesError {
            throw APIError(
                status: .contentTooLarge, code: "body_too_large", message: "request bodies are at most \(maxBodyBytes) bytes")
        }
        if gzip {
            do {
                buffer = try buffer.decompress(with: .gzip, maxSize: maxBodyBytes)
            } catch let error as CompressNIOError where error == .bufferOverflow {
                throw APIError(
                    status: .contentTooLarge, code: "body_too_large", message: "request bodies are at most \(maxBodyBytes) bytes, inflated")
            } catch {
                throw APIError.badRequest("malformed_gzip", "the body is not valid gzip")
            }
            // What it inflated to is what it holds now: the in-flight budget counts it (503 overloaded past it).
            try context.inFlight?.grow(to: buffer.readableBytes)
        }
        do {
            return try JSONParser.parse(Array(buffer.readableBytesView), limits: Self.bodyLimits)
        } catch where error.overLimit {
            throw APIError.badRequest("body_too_complex", "\(error) (refused while parsing)")
        } catch {
            throw APIError.badRequest("malformed_json", "the body is not valid JSON: \(error)")
        }
    }

    /// Stores the valid writes and reports the others (each operation on its own, batch-rules §4); with
    /// `Prefer: handling=strict`, any problem refuses the whole request (422) and nothing is stored. Answers
    /// `{"accepted": n, "ids": […], "rejected": […]}`.
    func store(
        _ records: [IngestRecord], problems: [Problem], context: IngestContext, admit: () throws -> Void = {}
    ) async throws -> Response {
        try await store(records, problems: ProblemList(problems), context: context, admit: admit)
    }

    func store(
        _ records: [IngestRecord], problems: ProblemList, context: IngestContext, admit: () throws -> Void = {}
    ) async throws -> Response {
        try await persist(records, problems: problems, context: context, admit: admit)
        let (rejected, omitted) = problems.reported
        var members = [
            JSONMember("accepted", .number(String(records.count))), JSONMember("ids", .array(records.map { .string($0.id) })),
            JSONMember("rejected", rejected),
        ]
        if omitted > 0 { members.append(JSONMember("rejected_omitted", .number(String(omitted)))) }
        return Self.json(.object(members))
    }

    /// Stores the records, waiting for the broker; throws (nothing promised) when there is nothing to store, when
    /// strict handling meets a problem, when `admit` refuses the request (asked only of a request its body does not
    /// refuse), or when the broker does not take them. Each API answers in its own shape.
    func persist(
        _ records: [IngestRecord], problems: ProblemList, context: IngestContext, admit: () throws -> Void = {}
    ) async throws {
        let logger = context.logger
        let refusal: APIError? =
            if context.strict && !problems.isEmpty {
                APIError.validation(problems)
            } else if records.isEmpty {
                problems.isEmpty
                    ? APIError.badRequest("empty_request", "the request holds no write") : APIError.validation(problems)
            } else {
                nil
            }
        // A request `admit` refuses stores nothing and counts no rejection, as one refused before reaching here.
        if refusal == nil { try admit() }
        IngestMetrics.rejected(problems)
        if let refusal { throw refusal }
        do {
            try await sink.store(records, requestID: context.requestID)
        } catch let error as KafkaError {
            logger.warning("write not stored", metadata: ["error": "\(error)", "records": "\(records.count)"])
            IngestMetrics.writes(records, outcome: "unavailable")
            throw Self.unavailable(error, records: records.count)
        }
        IngestMetrics.writes(records, outcome: "accepted")
    }

    /// A JSON answer.
    static func json(_ body: JSONValue, status: HTTPResponse.Status = .ok) -> Response {
        Response(
            status: status, headers: [.contentType: "application/json"],
            body: ResponseBody(byteBuffer: ByteBuffer(bytes: body.serialized)))
    }

    /// A broker outage or a full producer queue is 503 with Retry-After; nothing is answered 2xx unless stored.
    static func unavailable(_ error: KafkaError, records: Int) -> APIError {
        switch error.code {
        case .messageTooLarge:
            return APIError(status: .contentTooLarge, code: "record_too_large", message: "a write is larger than the broker accepts")
        case .queueFull, .brokerUnavailable, .timedOut, .fatal, .closed:
            let note = records > 1 ? " Some of the \(records) writes may be stored: retry with the same ids." : ""
            return APIError(
                status: .serviceUnavailable, code: "unavailable",
                message: "the write could not be stored now (\(error.code.rawValue)); retry later.\(note)",
                headers: [.retryAfter: error.code == .queueFull ? "1" : "5"])
        default:
            return APIError(status: .internalServerError, code: "internal_error", message: "the write could not be stored")
        }
    }

    /// The id of the `index`th write of a request: the client's, else derived from `Idempotency-Key` and the write's
    /// operation (`<key>:<op>:<index>`: the same key on another endpoint is another write), else the request's random
    /// server id and the index (one UUID per request, not per write). The orchestrator remembers ids per project and
    /// profile, so that a key or an id reused for another user's write never silences it.
    func recordID(client: String?, op: IngestOp, request: Request, context: IngestContext, index: Int) -> String {
        if let client { return client }
        // Checked before the handler (`IdempotencyKeyMiddleware`).
        if let key = request.headers[.idempotencyKey] {
            return "\(key):\(op.rawValue):\(index)"
        }
        return "\(context.serverID):\(index)"
    }
}
