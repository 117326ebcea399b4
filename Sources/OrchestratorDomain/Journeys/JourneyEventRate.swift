import Foundation
import Logging
import Metrics
import Shared
import Synchronization

/// The published limit of events per second per profile that journeys follow (docs/journeys.md, "Limits"): of the
/// events a journey names (an entry, a wait's branch, an exit rule), at most `JourneyDefinition.maxEventsPerSecond` of
/// one profile within one second of their time are matched against its journeys; the others are still applied to the
/// profile (and trigger campaigns), but enter, move and end no journey: counted
/// (`herald_journey_events_refused_total{project}`) and logged. Counted per configuration (`EngagementRules`) in
/// memory: a restart or a new configuration starts the count again.
final class JourneyEventRate: Sendable {
    private let counts = Mutex<[String: (second: Int64, count: Int)]>([:])
    private static let logger = Logger(label: "herald.journeys")
    /// Above this many profiles counted, the counts of past seconds are dropped.
    static let pruneAbove = 100_000

    /// Whether the profile's event at `time` is within the limit (and counts it).
    func admits(key: String, at time: Date) -> Bool {
        let second = Int64(exactly: time.timeIntervalSince1970.rounded(.down)) ?? 0
        let admitted = counts.withLock { counts in
            if counts.count > Self.pruneAbove { counts = counts.filter { $0.value.second >= second } }
            var entry: (second: Int64, count: Int) = counts[key].flatMap { $0.second == second ? $0 : nil } ?? (second, 0)
            guard entry.count < JourneyDefinition.maxEventsPerSecond else { return false }
            entry.count += 1
            counts[key] = entry
            return true
        }
        return admitted
    }

    static func refused(key: String, event: String) {
        let project = ProfileKey.project(of: key)
        Counter(label: "herald_journey_events_refused_total", dimensions: [("project", project)]).increment()
        logger.warning(
            "event not matched against journeys: over the profile's limit of events per second",
            metadata: ["profile": "\(key)", "event": "\(event)", "limit": "\(JourneyDefinition.maxEventsPerSecond)"])
    }
}
