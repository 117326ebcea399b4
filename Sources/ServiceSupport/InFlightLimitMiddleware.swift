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
/// A body that arrives compressed reserves what it inflates to once it is inflated (`InFlightReservation.grow`): a
/// gzip body of a few KiB may inflate to the body limit, so counting its compressed bytes let a flood of them past the
/// budget.
///
/// Every service's HTTP endpoints have one (the ingest's writes; the notifier's inbox, unsubscribe and SMS webhook; the
/// orchestrator's app reads).
package struct InFlightLimitMiddleware<Context: InFlightBudgetContext>: RouterMiddleware {
    let limit: Int
    let maxBodyBytes: Int
    private let budget: InFlightBudget

    package init(service: String, limit: Int, byteLimit: Int = .max, maxBodyBytes: Int = .max) {
        self.limit = limit
        self.maxBodyBytes = maxBodyBytes
        // Counts the requests refused (`herald_ingest_overloaded_total`, `herald_notifier_overloaded_total`, …).
        budget = InFlightBudget(service: service, byteLimit: byteLimit, refusals: Metrics.Counter(label: "herald_\(service)_overloaded_total"))
    }

    package func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws
        -> Response
    {
        let declared = request.headers[.contentLength].flatMap { Int($0) }
        let (_, requests) = budget.requests.add(1, ordering: .relaxed)
        let reservation = InFlightReservation(budget)
        defer {
            budget.requests.subtract(1, ordering: .relaxed)
            reservation.release()
        }
        guard requests <= limit else {
            budget.refusals.increment()
            throw OverloadedError(message: "this \(budget.service) is handling \(limit) requests already; retry shortly")
        }
        try reservation.grow(to: min(declared ?? maxBodyBytes, maxBodyBytes, budget.byteLimit))
        var context = context
        context.inFlight = reservation
        return try await next(request, context)
    }
}

/// A service's requests and bytes of bodies in flight.
final class InFlightBudget: Sendable {
    let requests = Atomic<Int>(0)
    let bytes = Atomic<Int>(0)
    let service: String
    let byteLimit: Int
    let refusals: Metrics.Counter

    init(service: String, byteLimit: Int, refusals: Metrics.Counter) {
        self.service = service
        self.byteLimit = byteLimit
        self.refusals = refusals
    }
}

/// A request context that carries its request's share of the in-flight byte budget.
package protocol InFlightBudgetContext: RequestContext {
    var inFlight: InFlightReservation? { get set }
}

/// The bytes one request holds of its service's in-flight budget, released when it is answered.
package final class InFlightReservation: Sendable {
    private let budget: InFlightBudget
    private let reserved = Atomic<Int>(0)

    init(_ budget: InFlightBudget) { self.budget = budget }

    /// Holds `bytes` in all (more than before: an inflated body): 503 `overloaded` when that passes the budget while
    /// other requests are in flight (one request always gets in).
    package func grow(to bytes: Int) throws(OverloadedError) {
        // Without a byte budget (the notifier's, the orchestrator's reads) only requests are counted.
        guard budget.byteLimit < .max else { return }
        let extra = min(bytes, budget.byteLimit) - reserved.load(ordering: .relaxed)
        guard extra > 0 else { return }
        reserved.add(extra, ordering: .relaxed)
        let (_, total) = budget.bytes.add(extra, ordering: .relaxed)
        guard total <= budget.byteLimit || budget.requests.load(ordering: .relaxed) == 1 else {
            budget.refusals.increment()
            throw OverloadedError(message: "this \(budget.service) is handling \(budget.byteLimit) bytes of request bodies already; retry shortly")
        }
    }

    func release() { budget.bytes.subtract(reserved.load(ordering: .relaxed), ordering: .relaxed) }
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
