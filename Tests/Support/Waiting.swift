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
///
/// The timeout only ends a test that is broken; it is not a measure of speed. Hence the default of 120 s: beside two
/// CPU burners, with every suite running at once on two cores, waits for conditions that hold within a second when the
/// machine is idle (a simulator listening, a first group join) took over 30 s, the former default (a fresh clone's
/// `bash .ci/run`, 4 tests of 566).
package func waitUntil(
    _ what: String, timeout: Duration = .seconds(120), _ condition: @Sendable () async throws -> Bool
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

/// Reads `topic` from the beginning until `enough` holds for what was read: each partition by assignment, from its
/// first record up to its end, again and again as the end moves. No group: a reader that joined one waited for the
/// embedded broker's first round (3 s), and once, on a loaded machine, read three partitions of four for 90 s.
package func readTopic(
    _ topic: String, bootstrap: String, logger: Logger, timeout: Duration = .seconds(90),
    until enough: @escaping @Sendable ([KafkaRecord]) -> Bool
) async throws -> [KafkaRecord] {
    let client = KafkaClientSettings(bootstrapServers: bootstrap)
    let deadline = ContinuousClock.now + timeout
    let admin = try KafkaAdmin(client: client, clientID: "test-reader-admin", logger: logger)
    var partitionCount: Int32?
    while partitionCount == nil, ContinuousClock.now < deadline {
        partitionCount = (try? await admin.describeTopics())?[topic]
        if partitionCount == nil { try await Task.sleep(for: .milliseconds(200)) }
    }
    await admin.shutdown()
    guard let partitionCount else { throw TimedOut(what: "records on \(topic) (the topic is not there)") }
    let reader = try KafkaPartitionReader(
        client: client, clientID: "test-reader", groupID: "test-reader-\(UUID().uuidString)", logger: logger)
    var records: [KafkaRecord] = []
    var next = [Int64](repeating: 0, count: Int(partitionCount))
    var read = [Int](repeating: 0, count: Int(partitionCount))
    do {
        while true {
            for number in 0..<Int(partitionCount) {
                let partition = TopicPartition(topic, Int32(number))
                guard let (_, end) = try? await reader.watermarks(partition, timeout: .seconds(5)), next[number] < end else { continue }
                try await reader.read(partition, from: next[number], until: end) { chunk in
                    records += chunk
                    read[number] += chunk.count
                }
                next[number] = end
            }
            if enough(records) { break }
            guard ContinuousClock.now < deadline else {
                throw TimedOut(
                    what: "records on \(topic) (\(records.count) read, not enough; by partition \(read.map(String.init).joined(separator: ", ")))")
            }
            try await Task.sleep(for: .milliseconds(100))
        }
    } catch {
        await reader.shutdown()
        throw error
    }
    await reader.shutdown()
    return records
}
