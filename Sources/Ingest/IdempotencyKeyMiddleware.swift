import HTTPTypes
import Hummingbird
import ServiceSupport
import Shared

/// `Idempotency-Key`, when sent, is 1 to 100 visible ASCII characters, else the request is refused (400
/// `invalid_idempotency_key`) before anything is read: a key that was silently ignored left a client believing its
/// retries were deduplicated when they were not.
struct IdempotencyKeyMiddleware: RouterMiddleware {
    typealias Context = IngestContext

    static let maxLength = 100

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws
        -> Response
    {
        if let key = request.headers[.idempotencyKey] {
            guard Rules.isVisibleASCII(key, length: 1...Self.maxLength) else {
                throw APIError.badRequest(
                    "invalid_idempotency_key", "Idempotency-Key is 1 to \(Self.maxLength) visible ASCII characters")
            }
        }
        return try await next(request, context)
    }
}
