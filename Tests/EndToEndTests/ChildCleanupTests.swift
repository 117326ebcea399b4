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
            let child = try Spawned("/bin/sleep", arguments: ["120"], environment: nil) { _ in }
            try "\(child.pid)".write(toFile: file, atomically: true, encoding: .utf8)
            exit(0)
        }
        let pid = try #require(pid_t(try String(contentsOfFile: file, encoding: .utf8)))
        // Gone, or a zombie nobody reaps here (the machine's first process does not): not running either way.
        try await waitUntil("the orphan stopped") {
            let state = (try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8))?.split(separator: " ").dropFirst(2).first
            return state == nil || state == "Z"
        }
    }
}
