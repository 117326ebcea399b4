import Foundation
import ServiceLifecycle

/// Runs due timers (segment time flips, campaign delays, schedules) and segment backfills: every 100 ms, or at once
/// while work is left, so that a due timer runs well within a second. A tick reads only the partitions whose timer hint
/// says a timer may be due (`DueHints`).
struct EngagementTicker: Service {
    let manager: OrchestratorPartitions
    var interval: Duration = .milliseconds(100)
    /// How often the sends held by quiet hours and the journeys' waiting instances are counted
    /// (`OrchestratorPartitions.countHeld`, `countWaiting`).
    var heldCount: Duration = .seconds(10)

    func run() async throws {
        var counted = ContinuousClock.now - heldCount
        while !Task.isCancelled && !Task.isShuttingDownGracefully {
            if ContinuousClock.now - counted >= heldCount {
                counted = ContinuousClock.now
                await manager.countHeld()
                await manager.countWaiting()
            }
            if await manager.tick() { continue }
            try? await Task.sleep(for: interval)
        }
    }
}
