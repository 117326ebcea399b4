import Foundation
import HeraldTestSupport
import Logging
import ServiceLifecycle
import ServiceSupport
import Synchronization
import Testing

/// `ShutdownWatchdog` in a service group, as `ServiceMain` runs it (last, its return ignored), with the process's exit
/// recorded instead of taken.
@Suite("Shutdown watchdog")
struct ShutdownWatchdogTests {
    /// A service whose stop takes `stopping` (a drain, a consumer leaving its group; or a hang).
    struct SlowToStop: Service {
        let stopping: Duration
        let stopped: Locked<Bool>

        func run() async throws {
            try? await gracefulShutdown()
            try? await Task.sleep(for: stopping)
            stopped.withLock { $0 = true }
        }
    }

    /// Runs a group of a service slow to stop and the watchdog, stops it, and returns the exit the watchdog asked for
    /// (nil: none) once the group ended and `grace` more has passed.
    func stop(stopping: Duration, limit: Duration, grace: Duration) async throws -> (exit: Int32?, stopped: Bool) {
        let exits = Locked<[Int32]>([])
        let stopped = Locked(false)
        let logger = Logger(label: "watchdog-test", factory: { _ in SwiftLogNoOpLogHandler() })
        let watchdog = ShutdownWatchdog(limit: limit, logger: logger, exit: { code in exits.withLock { $0.append(code) } })
        let group = ServiceGroup(
            configuration: ServiceGroupConfiguration(
                services: [
                    .init(service: SlowToStop(stopping: stopping, stopped: stopped)),
                    .init(service: watchdog, successTerminationBehavior: .ignore, failureTerminationBehavior: .ignore),
                ],
                gracefulShutdownSignals: [], cancellationSignals: [], logger: logger))
        let running = Task { try await group.run() }
        try await Task.sleep(for: .milliseconds(100))
        await group.triggerGracefulShutdown()
        if stopping < limit {
            try await running.value
            // As `ServiceMain` ends the process here; a test's process goes on, and nothing may come where the timer
            // would have fired.
            watchdog.disarm()
            try await Task.sleep(for: limit + grace)
        } else {
            // The group still waits for the slow service; the watchdog does not.
            try await waitUntil("the watchdog's exit", timeout: limit + grace) { !exits.withLock { $0 }.isEmpty }
            running.cancel()
            _ = try? await running.value
        }
        return (exits.withLock { $0 }.first, stopped.withLock { $0 })
    }

    @Test("a stop that outlasts the limit ends the process with 1; the slow service is not waited for")
    func hangingStop() async throws {
        let started = ContinuousClock.now
        let (exit, _) = try await stop(stopping: .seconds(30), limit: .milliseconds(500), grace: .seconds(10))
        #expect(exit == 1)
        #expect(ContinuousClock.now - started < .seconds(30), "the exit came before the stop's end")
    }

    @Test("a stop within the limit never meets the watchdog")
    func timelyStop() async throws {
        let (exit, stopped) = try await stop(stopping: .milliseconds(200), limit: .seconds(1), grace: .seconds(1))
        #expect(stopped)
        #expect(exit == nil)
    }
}
