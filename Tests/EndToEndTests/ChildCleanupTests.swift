import Foundation
import HeraldTestSupport
import Testing

@Suite("Children of the test process")
struct ChildCleanupTests {
    /// A process test that threw once left its orchestrator running for two hours after the test process had gone.
    @Test("a child still running when the test process exits gets SIGTERM: no test leaves an orphan behind")
    func noOrphans() async throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("herald-orphan-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: file) }
        await #expect(processExitsWith: .success) { [file = file as String] in
            // A child whose owner is never released, then the process ends, as a test run does.
            let child = try Spawned("/bin/sleep", arguments: ["600"], environment: nil) { _ in }
            try "\(child.pid)".write(toFile: file, atomically: true, encoding: .utf8)
            exit(0)
        }
        try await Self.stopped(pidIn: file)
    }

    /// A test process that crashed (no `atexit` handler ran) once left 18 services running for as long as the machine
    /// ran, one of them pushing to whatever listened next on its APNs simulator's old port.
    @Test("a child still running when the test process is killed dies with it")
    func noOrphansAfterACrash() async throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("herald-orphan-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: file) }
        await #expect(processExitsWith: .signal(SIGKILL)) { [file = file as String] in
            let child = try Spawned("/bin/sleep", arguments: ["600"], environment: nil) { _ in }
            try "\(child.pid)".write(toFile: file, atomically: true, encoding: .utf8)
            // Killed once the child is `sleep`: `setpriv` asks for its death signal before it runs the command, and a
            // parent gone before that ask is one no signal follows (on a loaded machine the kill once came first).
            // (Bounded: a child that never becomes `sleep` ends the wait, and the test says what is left running.)
            let deadline = ContinuousClock.now + .seconds(30)
            while (try? String(contentsOfFile: "/proc/\(child.pid)/comm", encoding: .utf8)) != "sleep\n", ContinuousClock.now < deadline {
                usleep(1_000)
            }
            kill(getpid(), SIGKILL)
        }
        try await Self.stopped(pidIn: file)
    }

    /// Waits until the process whose pid `file` holds is gone, or a zombie nobody reaps here (the machine's first
    /// process does not): not running either way. The child sleeps ten minutes, the wait gives up after one: an orphan
    /// left running is a failure, not a slow pass. (With `sleep 120` and the 120 s default bound, a child never
    /// stopped passed as well: checked by turning `Spawner.dieWithParent` off.)
    static func stopped(pidIn file: String) async throws {
        let pid = try #require(pid_t(try String(contentsOfFile: file, encoding: .utf8)))
        defer { kill(pid, SIGKILL) }
        try await waitUntil("the orphan stopped", timeout: .seconds(60)) {
            let state = (try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8))?.split(separator: " ").dropFirst(2).first
            return state == nil || state == "Z"
        }
    }
}
