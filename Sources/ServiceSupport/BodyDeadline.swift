import Foundation
import Shared
import Hummingbird
import NIOCore
import Synchronization

/// A request body read within a deadline: a client trickling its body would otherwise hold a request slot, and its
/// memory, for as long as it likes. `HERALD_HTTP_BODY_TIMEOUT_SECONDS` (30) in every service.
package enum BodyDeadline {
    /// The body, or nil when it has not arrived whole within `limit`: then the connection is closed (a timer on the
    /// connection's event loop; a task group racing a sleep per request cost the ingest 15–20 % of its throughput).
    /// Over `maxBytes`, Hummingbird's `NIOTooManyBytesError`.
    package static func collect(
        _ request: Request, upTo maxBytes: Int, within limit: Duration, channel: any Channel
    ) async throws -> ByteBuffer? {
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
            return nil
        }
    }

    private final class ExpiryFlag: Sendable {
        let value = Atomic<Bool>(false)
    }
}
