import Foundation
import Shared
import Hummingbird
import NIOCore
import Synchronization

/// A request body read within a deadline: a client trickling its body would otherwise hold a request slot, and its
/// memory, for as long as it likes. `HERALD_HTTP_BODY_TIMEOUT_SECONDS` (30) in every service.
package enum BodyDeadline {
    /// The body; `BodyTimeoutError` when it has not arrived whole within `limit`, and then the connection is closed (a
    /// timer on the connection's event loop; a task group racing a sleep per request cost the ingest 15–20 % of its
    /// throughput). Over `maxBytes`, Hummingbird's `NIOTooManyBytesError`.
    package static func collect(
        _ request: Request, upTo maxBytes: Int, within limit: Duration, channel: any Channel
    ) async throws -> ByteBuffer {
        var request = request
        let expired = ExpiryFlag()
        let timer = channel.eventLoop.scheduleTask(in: .nanoseconds(Int64(limit.timeInterval * 1e9))) {
            expired.value.store(true, ordering: .relaxed)
            channel.close(promise: nil)
        }
        defer { timer.cancel() }
        do {
            return try await request.collectBody(upTo: maxBytes)
        } catch where expired.value.load(ordering: .relaxed) {
            throw BodyTimeoutError(limit: limit)
        }
    }

    private final class ExpiryFlag: Sendable {
        let value = Atomic<Bool>(false)
    }
}

/// 408 `body_timeout`: what the request log of a body that did not arrive in time says (its connection is closed, so
/// no client reads the answer).
package struct BodyTimeoutError: HTTPResponseError, CodedError {
    package let limit: Duration
    package var status: HTTPResponse.Status { .requestTimeout }
    package var code: String { "body_timeout" }

    package func response(from request: Request, context: some RequestContext) throws -> Response {
        Response.jsonError(status, code, "the body did not arrive within \(limit.components.seconds) s")
    }
}
