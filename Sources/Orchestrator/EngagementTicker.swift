import Foundation
import ServiceLifecycle

/// Runs due timers (segment time flips, campaign delays, schedules) and segment backfills: every 100 ms, or at once
/// while work is left, so that a due timer runs well within a second.
struct EngagementTicker: Service {
    let manager: OrchestratorPartitions
    var interval: Duration = .milliseconds(100)

    func run() async throws {
        while !Task.isCancelled && !Task.isShuttingDownGracefully {
            if await manager.tick() { continue }
            try? await Task.sleep(for: interval)
        }
    }
}
