import Foundation
import Logging
import HeraldTestSupport
import Shared
import Testing

/// librdkafka 2.0.2's mock re-binds a broker's port when the broker is set down, and aborts the process when that
/// bind fails. A child being spawned holds a copy of the listener until it closes it: tests that start processes while
/// another test took a broker down aborted the whole test run (twice in make test; here within seconds, even with
/// spawns excluded from the re-bind, because close-on-exec descriptors are closed after posix_spawn has returned).
@Suite("Embedded broker down while processes start")
struct BrokerDownSpawnTests {
    @Test("brokers set down and up while children are spawned: the process is not aborted")
    func setDownWhileSpawning() async {
        await #expect(processExitsWith: .success) {
            try await BrokerDownSpawnTests.toggleWhileSpawning(rounds: 40)
        }
    }

    static func toggleWhileSpawning(rounds: Int, logger: Logger = quietLogger) async throws {
        let cluster = try EmbeddedKafkaCluster(brokers: 1, logger: logger)
        let stop = Locked(false)
        let spawner = Task.detached {
            while !stop.withLock({ $0 }) {
                _ = try await runCommand("/bin/true", [])
            }
        }
        for _ in 0..<rounds {
            for id in cluster.brokerIDs {
                try cluster.setBrokerDown(id)
                try cluster.setBrokerUp(id)
            }
        }
        stop.withLock { $0 = true }
        _ = try await spawner.value
        await cluster.shutdown()
    }
}
