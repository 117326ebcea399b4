import Hummingbird
import Metrics
import Synchronization

/// At most `limit` requests handled at once: beyond it, 503 `overloaded` with `Retry-After: 1`, before the body is read.
/// Each request may hold its parsed body while it waits for the broker (up to `HERALD_PRODUCE_TIMEOUT_MS`), so without
/// a cap a Kafka outage or a flood of slow clients grows memory without bound.
struct InFlightLimitMiddleware: RouterMiddleware {
    typealias Context = IngestContext

    let limit: Int
    private let inFlight = Counter()

    init(limit: Int) { self.limit = limit }

    final class Counter: Sendable {
        let value = Atomic<Int>(0)
    }

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws
        -> Response
    {
        let (_, now) = inFlight.value.add(1, ordering: .relaxed)
        defer { inFlight.value.subtract(1, ordering: .relaxed) }
        guard now <= limit else {
            Metrics.Counter(label: "herald_ingest_overloaded_total").increment()
            throw APIError(
                status: .serviceUnavailable, code: "overloaded",
                message: "this ingest is handling \(limit) requests already; retry shortly", headers: [.retryAfter: "1"])
        }
        return try await next(request, context)
    }
}
