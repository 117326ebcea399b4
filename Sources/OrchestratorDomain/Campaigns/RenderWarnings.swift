import Foundation
import Logging
import Synchronization

/// The warning for a message or card left out of an app's sync because it could not be rendered: once per message
/// (or card) a minute at most. The failure is the profile's (a value missing without a default) and repeats at each of
/// its app's syncs, every few seconds while the app is open; the counter counts each, the log says it, not a line per
/// sync.
enum RenderWarnings {
    private static let last = Mutex<[String: ContinuousClock.Instant]>([:])
    static let interval: Duration = .seconds(60)

    /// Logs `message` unless one for `key` was logged within `interval`; returns whether it did.
    @discardableResult
    static func warn(_ logger: Logger, key: String, _ message: Logger.Message, metadata: Logger.Metadata) -> Bool {
        let now = ContinuousClock.now
        let due = last.withLock { last in
            if let previous = last[key], now - previous < interval { return false }
            last[key] = now
            return true
        }
        if due { logger.warning(message, metadata: metadata.merging(["repeats_logged_every": "60s"]) { $1 }) }
        return due
    }
}
