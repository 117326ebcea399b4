import Foundation
import Logging
import Shared
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

/// Reads `topic` from the beginning with a fresh group until `enough` holds for what was read, then leaves.
package func readTopic(
    _ topic: String, bootstrap: String, logger: Logger, timeout: Duration = .seconds(90),
    until enough: @escaping @Sendable ([KafkaRecord]) -> Bool
) async throws -> [KafkaRecord] {
    var configuration = KafkaConsumerConfiguration(
        client: KafkaClientSettings(bootstrapServers: bootstrap), clientID: "test-reader",
        groupID: "test-reader-\(UUID().uuidString)", topics: [topic])
    configuration.sessionTimeout = .seconds(3)
    let consumer = try KafkaConsumer(configuration: configuration, logger: logger)
    let records = Locked<[KafkaRecord]>([])
    let reading = Task { for try await batch in consumer.batches() { records.withLock { $0 += batch.records } } }
    do {
        try await waitUntil("records on \(topic)", timeout: timeout) { enough(records.withLock { $0 }) }
    } catch {
        consumer.stop()
        await consumer.close()
        // How far it got: nothing read at all (the reader never got the partitions) reads differently from too few.
        // Any other error (a cancelled test) goes out as it is.
        guard error is TimedOut else { throw error }
        throw TimedOut(what: "records on \(topic) (\(records.withLock { $0.count }) read, not enough)")
    }
    consumer.stop()
    try await reading.value
    await consumer.close()
    return records.withLock { $0 }
}
