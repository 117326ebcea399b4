import Foundation
import Logging
import Synchronization

/// What the test targets share.
package struct TimedOut: Error, CustomStringConvertible {
    package var what: String
    package init(what: String) { self.what = what }
    package var description: String { "timed out waiting for \(what)" }
}

/// Waits until `condition` holds, checking every 50 ms, or throws after `timeout`. Never a fixed sleep.
package func waitUntil(
    _ what: String, timeout: Duration = .seconds(30), _ condition: @Sendable () async throws -> Bool
) async throws {
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline {
        if try await condition() { return }
        try await Task.sleep(for: .milliseconds(50))
    }
    if try await condition() { return }
    throw TimedOut(what: what)
}

/// Shared mutable state for closures (a `Mutex` itself cannot be captured).
package final class Locked<Value: Sendable>: Sendable {
    private let mutex: Mutex<Value>
    package init(_ value: Value) { mutex = Mutex(value) }
    package func withLock<R>(_ body: (inout Value) -> R) -> R { mutex.withLock { body(&$0) } }
}

/// The repository's sample catalog of projects, apps and keys (config/apps.sample.json).
package let sampleAppsFile = repositoryFile("config/apps.sample.json")

/// A file of the repository, by its path from the root.
package func repositoryFile(_ path: String) -> String {
    var url = URL(fileURLWithPath: #filePath)
    for _ in 0..<3 { url.deleteLastPathComponent() }
    return url.appendingPathComponent(path).path
}
