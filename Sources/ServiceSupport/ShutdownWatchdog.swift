import Dispatch
import Foundation
import Logging
import ServiceLifecycle
import Shared

/// Ends the process when a graceful stop outlasts `limit`. A stop waits for work that must finish (a notifier's
/// provider calls, a consumer leaving its group), and librdkafka 2.0.2 can hang in it: an orchestrator whose broker
/// went away in the middle of a test was still running minutes after its SIGTERM, a consumer's `rd_kafka_destroy`
/// joining a broker thread that never ended. Ending it then is safe: everything a service decided is in its
/// database or on Kafka, as a SIGKILL test shows (the outbox is produced again, an attempt in doubt is settled).
///
/// It is the group's last service, so the first to hear the stop: it starts its timer and returns, and the others stop
/// in order meanwhile. An ordinary stop ends the process (`ServiceMain`) long before the timer fires: the process tests
/// that stop a service with SIGTERM expect exit code 0.
package struct ShutdownWatchdog: Service {
    package let limit: Duration
    package let logger: Logger
    /// `_exit` in a service; tests record the call instead.
    package let exit: @Sendable (Int32) -> Void

    package init(limit: Duration, logger: Logger, exit: @escaping @Sendable (Int32) -> Void = { _exit($0) }) {
        self.limit = limit
        self.logger = logger
        self.exit = exit
    }

    package func run() async throws {
        let (limit, logger, exit) = (limit, logger, exit)
        // The timer starts in the stop's own call (ServiceLifecycle runs a graceful-shutdown handler where the group
        // stops its services), not once this task is scheduled again: under a whole test run's load, waiting for that
        // once let a stop pass 20 s without the timer started. Cancelled instead (the group failed): no timer, the
        // group's own error ends the process.
        try? await withGracefulShutdownHandler {
            try await gracefulShutdown()
        } onGracefulShutdown: {
            Self.startTimer(limit: limit, logger: logger, exit: exit)
        }
    }

    /// A thread of its own, not Dispatch's or the concurrency pool's: a stop that hangs may be one whose threads are all
    /// blocked, and the timer must fire then most of all (under a whole test run's load, a timer on Dispatch's global
    /// queue once fired more than 20 s late).
    private static func startTimer(limit: Duration, logger: Logger, exit: @escaping @Sendable (Int32) -> Void) {
        let timer = Thread {
            Thread.sleep(forTimeInterval: limit.timeInterval)
            // Logged from another thread: standard output may be a pipe nobody reads any more, and a blocked write
            // must not keep the process alive.
            let log = Thread {
                logger.critical(
                    "stop did not finish in time: exiting", metadata: ["limit_seconds": .stringConvertible(limit.components.seconds)])
            }
            log.start()
            Thread.sleep(forTimeInterval: 0.2)
            exit(1)
        }
        timer.name = "herald-shutdown-watchdog"
        timer.start()
    }
}
