import Shared
import Synchronization

/// The campaigns the ingest knows, from `herald.config` (read by a `ConfigFollower`, as the orchestrator reads it):
/// what `POST /v1/campaigns/trigger` checks before it accepts a trigger, so that a trigger the orchestrator could only
/// dead-letter is refused to its caller instead.
final class CampaignDirectory: Sendable {
    enum Answer: Equatable {
        /// The configuration has not been read whole yet (the ingest has just started).
        case loading
        case unknown
        /// It exists, and is triggered by something else (an event, a segment, a schedule).
        case notAPITriggered
        case disabled
        case triggerable
    }

    struct Entry: Sendable {
        var api: Bool
        var enabled: Bool
    }

    /// `project/campaign` → whether it is API-triggered and enabled; nil until the first whole read.
    private let campaigns: Mutex<[String: Entry]?>

    /// Loading until `update`.
    init() {
        campaigns = Mutex(nil)
    }

    init(_ campaigns: [String: Entry]) {
        self.campaigns = Mutex(campaigns)
    }

    func update(_ config: HeraldConfiguration) {
        let index = Self.index(config)
        campaigns.withLock { $0 = index }
    }

    var isLoaded: Bool { campaigns.withLock { $0 != nil } }

    func answer(project: String, campaign: String) -> Answer {
        campaigns.withLock { campaigns in
            guard let campaigns else { return .loading }
            guard let found = campaigns["\(project)/\(campaign)"] else { return .unknown }
            if !found.api { return .notAPITriggered }
            return found.enabled ? .triggerable : .disabled
        }
    }

    private static func index(_ config: HeraldConfiguration) -> [String: Entry] {
        config.campaigns.mapValues { Entry(api: $0.trigger == .api, enabled: $0.enabled) }
    }
}
