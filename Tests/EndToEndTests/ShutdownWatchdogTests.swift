import Foundation
import HeraldTestSupport
import Logging
import ServiceLifecycle
import ServiceSupport
import Testing

/// `ShutdownWatchdog` in a service group, as `ServiceMain` runs it (last, its return ignored), with the process's exit
/// recorded instead of taken. That an ordinary stop ends before it is what the process tests show: every one that
/// stops a service with SIGTERM expects exit code 0 (`ServiceProcessTests/startHealthStop`, ...).
@Suite("Shutdown watchdog")
struct ShutdownWatchdogTests {
    /// A service whose stop takes 30 s (a drain, a consumer leaving its group; or a hang).
    struct SlowToStop: Service {
        func run() async throws {
            try? await gracefulShutdown()
            try? await Task.sleep(for: .seconds(30))
        }
    }

    /// `inner`, saying when the group has started it.
    struct Started<Inner: Service>: Service {
        let inner: Inner
        let started: Locked<Bool>
        func run() async throws {
            started.withLock { $0 = true }
            try await inner.run()
        }
    }

    @Test("a stop that outlasts the limit ends the process with 1 once the limit has passed, not waiting for the slow service")
    func hangingStop() async throws {
        let exits = Locked<[(code: Int32, at: ContinuousClock.Instant)]>([])
        let logger = Logger(label: "watchdog-test", factory: { _ in SwiftLogNoOpLogHandler() })
        let limit: Duration = .milliseconds(500)
        let watchdog = ShutdownWatchdog(limit: limit, logger: logger, exit: { code in exits.withLock { $0.append((code, .now)) } })
        let (slowStarted, watchdogStarted) = (Locked(false), Locked(false))
        let group = ServiceGroup(
            configuration: ServiceGroupConfiguration(
                services: [
                    .init(service: Started(inner: SlowToStop(), started: slowStarted)),
                    .init(
                        service: Started(inner: watchdog, started: watchdogStarted), successTerminationBehavior: .ignore,
                        failureTerminationBehavior: .ignore),
                ],
                gracefulShutdownSignals: [], cancellationSignals: [], logger: logger))
        let running = Task { try await group.run() }
        // The stop once came before a loaded machine had started the services (a fixed 100 ms): waited for instead.
        try await waitUntil("both services running") { slowStarted.withLock { $0 } && watchdogStarted.withLock { $0 } }
        let stopped = ContinuousClock.now
        await group.triggerGracefulShutdown()
        // The group still waits for the slow service; the watchdog does not.
        try await waitUntil("the watchdog's exit", timeout: .seconds(20)) { !exits.withLock { $0 }.isEmpty }
        let exit = try #require(exits.withLock { $0 }.first)
        #expect(exit.code == 1)
        #expect(exit.at - stopped >= limit, "not before its limit")
        #expect(exit.at - stopped < .seconds(30), "not after the slow service")
        running.cancel()
        _ = try? await running.value
        #expect(exits.withLock { $0 }.count == 1)
    }
}
