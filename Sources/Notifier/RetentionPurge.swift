import Foundation
import Logging
import ServiceLifecycle
import Shared

/// The notifier's retention (docs/retention.md), at start and then every `interval`: inbox entries older than
/// `inboxRetention`; finished ledger rows and resolved sends older than `sendRetention` (the dedupe window: a send id
/// replayed within it is still dropped).
struct RetentionPurge: Service {
    let partitions: NotifierPartitions
    let inboxRetention: Duration
    let sendRetention: Duration
    let interval: Duration
    let logger: Logger
    var clock: @Sendable () -> Date = { Date() }

    func run() async throws {
        // The wait between rounds is long: a graceful shutdown cancels it rather than waiting it out.
        try? await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                await round()
                try await Task.sleep(for: interval)
            }
        }
    }

    /// One purge over the open partitions; returns how many inbox entries, and how many ledger rows and sends, went.
    @discardableResult
    func round() async -> (inbox: Int, sends: Int) {
        let now = clock()
        var result = (inbox: 0, sends: 0)
        let inboxCutoff = now.addingTimeInterval(-inboxRetention.timeInterval)
        do {
            result.inbox = try await partitions.purgeInbox(before: inboxCutoff)
            NotifierMetrics.purgedFromInbox(result.inbox)
            if result.inbox > 0 {
                logger.info("inbox purged", metadata: ["entries": "\(result.inbox)", "before": .time(inboxCutoff)])
            }
        } catch {
            logger.warning("inbox purge failed", metadata: ["error": "\(error)"])
        }
        let sendCutoff = now.addingTimeInterval(-sendRetention.timeInterval)
        do {
            result.sends = try await partitions.purgeSends(before: sendCutoff)
            if result.sends > 0 {
                logger.info("ledger purged", metadata: ["rows": "\(result.sends)", "before": .time(sendCutoff)])
            }
        } catch {
            logger.warning("ledger purge failed", metadata: ["error": "\(error)"])
        }
        return result
    }
}
