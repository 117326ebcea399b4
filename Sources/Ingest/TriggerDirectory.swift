import Shared
import Synchronization

/// The campaigns and journeys the ingest knows, from `herald.config` (read by a `ConfigFollower`, as the orchestrator
/// reads it): what `POST /v1/campaigns/trigger` and `POST /v1/journeys/trigger` check before they accept a trigger, so
/// that a trigger the orchestrator could only dead-letter is refused to its caller instead.
final class TriggerDirectory: Sendable {
    enum Answer: Equatable {
        /// The configuration has not been read whole yet (the ingest has just started).
        case loading
        case unknown
        /// It exists, and is triggered (entered) by something else (an event, a segment, a schedule).
        case notAPITriggered
        case disabled
        case triggerable
    }

    struct Entry: Sendable {
        var api: Bool
        var enabled: Bool
    }

    /// What a trigger names.
    enum Kind: Sendable {
        case campaign
        case journey
    }

    /// `project/id` → whether it is triggered by the API and enabled, per kind; nil until the first whole read.
    private let entries: Mutex<(campaigns: [String: Entry], journeys: [String: Entry])?>

    /// Loading until `update`.
    init() {
        entries = Mutex(nil)
    }

    init(_ campaigns: [String: Entry], journeys: [String: Entry] = [:]) {
        entries = Mutex((campaigns, journeys))
    }

    func update(_ config: HeraldConfiguration) {
        let campaigns = config.campaigns.mapValues { Entry(api: $0.trigger == .api, enabled: $0.enabled) }
        let journeys = config.journeys.mapValues { Entry(api: $0.entry == .api, enabled: $0.enabled) }
        entries.withLock { $0 = (campaigns, journeys) }
    }

    var isLoaded: Bool { entries.withLock { $0 != nil } }

    func answer(_ kind: Kind, project: String, id: String) -> Answer {
        entries.withLock { entries in
            guard let entries else { return .loading }
            guard let found = (kind == .campaign ? entries.campaigns : entries.journeys)["\(project)/\(id)"] else { return .unknown }
            if !found.api { return .notAPITriggered }
            return found.enabled ? .triggerable : .disabled
        }
    }
}
