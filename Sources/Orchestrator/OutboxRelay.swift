import Foundation
import ServiceLifecycle

/// Produces outbox records left behind (after a restart, or while the broker was down) once a second, and prunes the
/// dedupe window every ten minutes, until shutdown.
struct OutboxRelay: Service {
    let manager: OrchestratorPartitions
    var interval: Duration = .seconds(1)
    var pruneEvery = 600

    func run() async throws {
        var round = 0
        while !Task.isCancelled && !Task.isShuttingDownGracefully {
            await manager.flushUnflushed()
            if round % pruneEvery == 0 { await manager.applyRetention() }
            round += 1
            try? await Task.sleep(for: interval)
        }
    }
}
