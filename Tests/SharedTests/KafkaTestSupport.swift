import Foundation
import Logging
import HeraldTestSupport
import Shared
import Synchronization

/// Logs of the code under test: silent unless HERALD_TEST_LOG is set (then to stderr).
let testLogger: Logger = {
    if ProcessInfo.processInfo.environment["HERALD_TEST_LOG"] != nil {
        var logger = Logger(label: "test", factory: { StreamLogHandler.standardError(label: $0) })
        logger.logLevel = .debug
        return logger
    }
    return Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })
}()

/// A fresh embedded cluster for one test, shut down afterwards even when the test throws.
func withCluster<T>(brokers: Int = 3, _ body: (EmbeddedKafkaCluster) async throws -> T) async throws -> T {
    let cluster = try EmbeddedKafkaCluster(brokers: brokers, logger: testLogger)
    do {
        let result = try await body(cluster)
        await cluster.shutdown()
        return result
    } catch {
        await cluster.shutdown()
        throw error
    }
}

/// A name no other test uses, so tests can share a cluster and run in parallel.
func uniqueName(_ prefix: String) -> String {
    "\(prefix)-\(UUID().uuidString.prefix(8).lowercased())"
}

func makeProducer(
    _ cluster: EmbeddedKafkaCluster, deliveryTimeout: Duration = .seconds(30), maxQueuedRecords: Int = 100_000,
    overrides: [String: String] = [:]
) throws -> KafkaProducer {
    var configuration = KafkaProducerConfiguration(
        client: KafkaClientSettings(bootstrapServers: cluster.bootstrapServers, overrides: overrides),
        clientID: uniqueName("producer"))
    configuration.deliveryTimeout = deliveryTimeout
    configuration.maxQueuedRecords = maxQueuedRecords
    return try KafkaProducer(configuration: configuration, logger: testLogger)
}

func consumerConfiguration(_ cluster: EmbeddedKafkaCluster, group: String, topics: [String])
    -> KafkaConsumerConfiguration
{
    var configuration = KafkaConsumerConfiguration(
        client: KafkaClientSettings(bootstrapServers: cluster.bootstrapServers),
        clientID: uniqueName("consumer"), groupID: group, topics: topics)
    // The mock group waits session timeout - 1 s for members on a rebalance: keep it short in tests.
    configuration.sessionTimeout = .seconds(3)
    return configuration
}

/// How long `rounds` rebalance rounds of the embedded broker take with members of this session timeout: each lasts the
/// session timeout minus 1 s, and a follower that loses the mock's SyncGroup race (docs/kafka.md) costs one more. A
/// test waiting for a rebalance's outcome gives it a number of rounds, not a fixed time.
func mockRounds(_ rounds: Int, sessionTimeout: Duration) -> Duration {
    (sessionTimeout - .seconds(1)) * rounds + .seconds(3)
}

/// Records consumed by one member, collected by a task that iterates its batches.
final class Collector: Sendable {
    let name: String
    private let store: OffsetStore?
    private let records = Mutex<[KafkaRecord]>([])

    init(name: String, store: OffsetStore? = nil) {
        self.name = name
        self.store = store
    }

    /// "Processes" a batch: keeps its records and, with a store, their next offsets in the same step.
    func add(_ batch: KafkaBatch) {
        records.withLock { $0.append(contentsOf: batch.records) }
        store?.store(batch)
    }
    var all: [KafkaRecord] { records.withLock { $0 } }
    var count: Int { records.withLock { $0.count } }
}

/// Starts iterating `consumer` into `collector`; the task ends when the iteration does.
func startCollecting(_ consumer: KafkaConsumer, into collector: Collector) -> Task<Void, any Error> {
    Task {
        for try await batch in consumer.batches() { collector.add(batch) }
    }
}

extension String {
    var bytes: [UInt8] { Array(utf8) }
}
