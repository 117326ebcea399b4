import HTTPTypes
import Hummingbird
import Metrics
import Synchronization

/// At most `limit` requests, and at most `byteLimit` bytes of their bodies, handled at once: beyond either, 503
/// `overloaded` with `Retry-After: 1`, before the body is read. Each request may hold its parsed body (several times
/// its bytes) while it waits for the broker (up to `HERALD_PRODUCE_TIMEOUT_MS`), so without a cap a Kafka outage or a
/// flood of slow clients grows memory without bound; counting requests alone let 256 bodies of 2 MiB in at once. A
/// request reserves its `Content-Length`, or the body limit when it has none (a chunked body), and releases it when
/// answered; one request always gets in, so that a body up to the limit can be sent to an idle ingest.
///
/// Every service's HTTP endpoints have one (the ingest's writes; the notifier's inbox, unsubscribe and SMS webhook).
package struct InFlightLimitMiddleware<Context: RequestContext>: RouterMiddleware {
    let limit: Int
    let byteLimit: Int
    let maxBodyBytes: Int
    /// Counts the requests refused (`herald_ingest_overloaded_total`, `herald_notifier_overloaded_total`).
    let refusals: Metrics.Counter
    let service: String
    private let inFlight = Counters()

    package init(service: String, limit: Int, byteLimit: Int = .max, maxBodyBytes: Int = .max) {
        self.limit = limit
        self.byteLimit = byteLimit
        self.maxBodyBytes = maxBodyBytes
        self.service = service
        refusals = Metrics.Counter(label: "herald_\(service)_overloaded_total")
    }

    final class Counters: Sendable {
        let requests = Atomic<Int>(0)
        let bytes = Atomic<Int>(0)
    }

    package func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws
        -> Response
    {
        let declared = request.headers[.contentLength].flatMap { Int($0) }
        let reserved = min(declared ?? maxBodyBytes, maxBodyBytes)
        let (_, requests) = inFlight.requests.add(1, ordering: .relaxed)
        let (_, bytes) = inFlight.bytes.add(reserved, ordering: .relaxed)
        defer {
            inFlight.requests.subtract(1, ordering: .relaxed)
            inFlight.bytes.subtract(reserved, ordering: .relaxed)
        }
        guard requests <= limit, bytes <= byteLimit || requests == 1 else {
            refusals.increment()
            let what = requests > limit ? "\(limit) requests" : "\(byteLimit) bytes of request bodies"
            throw OverloadedError(message: "this \(service) is handling \(what) already; retry shortly")
        }
        return try await next(request, context)
    }
}

/// An error with the API's code, which request logs name (`error_code`).
package protocol CodedError: Error {
    var code: String { get }
}

/// 503 `overloaded` with `Retry-After: 1`, in the API's one error shape.
package struct OverloadedError: HTTPResponseError, CodedError {
    package let message: String
    package var status: HTTPResponse.Status { .serviceUnavailable }
    package var code: String { "overloaded" }

    package func response(from request: Request, context: some RequestContext) throws -> Response {
        var response = Response.jsonError(status, code, message)
        response.headers[.retryAfter] = "1"
        return response
    }
}
