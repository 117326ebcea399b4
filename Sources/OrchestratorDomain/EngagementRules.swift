import Foundation
import Shared
import Synchronization

/// The configuration as the partitions apply it: segments per project with the fields they read, and campaigns per
/// trigger. Built once per configuration change; shared by every partition (a class: the stages each hold it).
package final class EngagementRules: Sendable {
    package let config: HeraldConfiguration
    /// The clock segments and campaigns read (`now` in conditions, delays, schedules); tests move it by hand.
    package let clock: @Sendable () -> Date
    /// How many partitions the keyed topics have: a campaign's send rate limit is shared evenly by them.
    package let partitions: Int
    /// Unique to this configuration in the process: a cached answer names the one it was computed with
    /// (`ReadTagCache.Tag.generation`).
    package let generation = EngagementRules.generations.add(1, ordering: .relaxed).newValue
    private static let generations = Atomic<UInt64>(0)
    let segmentsByProject: [String: [CompiledSegment]]
    /// Per project: change key → positions in `segmentsByProject` of the segments a change to it can affect.
    let dependents: [String: [ChangeKey: [Int]]]
    /// `<project>/<EVENT>` → campaigns triggered by the event.
    let eventCampaigns: [String: [CampaignDefinition]]
    /// Segment key → campaigns triggered by entering it, and by leaving it.
    let entryCampaigns: [String: [CampaignDefinition]]
    let exitCampaigns: [String: [CampaignDefinition]]
    /// `<project>/<EVENT>` → campaigns whose waiting delays the event cancels.
    let cancellers: [String: [CampaignDefinition]]
    /// `<project>/<app trigger>` (`demo/session_start`) → campaigns triggered by what apps report.
    let appCampaigns: [String: [CampaignDefinition]]
    /// Each project's global holdout groups, by id.
    let holdouts: [String: [HoldoutGroup]]
    /// `<project>/<EVENT>` → the campaigns that count the event as a conversion, with the conversion's index.
    let conversionCampaigns: [String: [(campaign: CampaignDefinition, index: Int)]]

    /// The journeys' indexes (`JourneyIndex`).
    let journeys: JourneyIndex
    /// The events per second per profile journeys follow (`JourneyEventRate`).
    let journeyEventRate = JourneyEventRate()

    package static let none = EngagementRules(config: HeraldConfiguration())

    /// Whether there is anything to evaluate (no segments, campaigns or journeys: writes skip the engine).
    var isActive: Bool { !config.segments.isEmpty || !config.campaigns.isEmpty || !config.journeys.isEmpty }

    package init(config: HeraldConfiguration, clock: @escaping @Sendable () -> Date = { Date() }, partitions: Int = 1) {
        self.config = config
        self.clock = clock
        self.partitions = max(1, partitions)
        var segments: [String: [CompiledSegment]] = [:]
        for segment in config.segments.values.sorted(by: { $0.key < $1.key }) {
            segments[segment.project, default: []].append(CompiledSegment(segment))
        }
        segmentsByProject = segments
        dependents = segments.mapValues(CompiledSegment.dependents)
        var events: [String: [CampaignDefinition]] = [:]
        var entries: [String: [CampaignDefinition]] = [:]
        var exits: [String: [CampaignDefinition]] = [:]
        var cancels: [String: [CampaignDefinition]] = [:]
        var apps: [String: [CampaignDefinition]] = [:]
        var conversions: [String: [(campaign: CampaignDefinition, index: Int)]] = [:]
        // Conversions count for disabled campaigns too: a campaign stopped yesterday still converts its recipients.
        for campaign in config.campaigns.values.sorted(by: { $0.key < $1.key }) {
            for (index, conversion) in campaign.conversions.enumerated() {
                conversions["\(campaign.project)/\(conversion.event)", default: []].append((campaign, index))
            }
        }
        conversionCampaigns = conversions
        holdouts = Dictionary(grouping: config.holdouts.values.sorted { $0.key < $1.key }, by: \.project)
        for campaign in config.campaigns.values.sorted(by: { $0.key < $1.key }) where campaign.enabled {
            switch campaign.trigger {
            case .event(let name, _): events["\(campaign.project)/\(name)", default: []].append(campaign)
            case .segmentEntry(let segment): entries["\(campaign.project)/\(segment)", default: []].append(campaign)
            case .segmentExit(let segment): exits["\(campaign.project)/\(segment)", default: []].append(campaign)
            case .app(let kind, _): apps["\(campaign.project)/\(kind.rawValue)", default: []].append(campaign)
            case .schedule, .localSchedule, .api: break
            }
            for name in campaign.cancelOn { cancels["\(campaign.project)/\(name)", default: []].append(campaign) }
        }
        eventCampaigns = events
        entryCampaigns = entries
        exitCampaigns = exits
        cancellers = cancels
        appCampaigns = apps
        journeys = JourneyIndex(config.journeys)
    }

    /// A campaign, or a journey's message node run as one (`JourneyDefinition.campaign(node:)`), by key.
    func campaign(_ key: String) -> CampaignDefinition? {
        config.campaigns[key] ?? journeys.messageCampaigns[key]
    }

    /// A campaign run on a schedule, or a journey's scheduled entry, by key (the ref of its `schedule` timer).
    func scheduled(_ key: String) -> CampaignDefinition? {
        config.campaigns[key] ?? journeys.scheduledEntries[key]
    }

    /// The campaigns and journeys' entries whose trigger is a schedule, enabled or not, in key order.
    var scheduledCampaigns: [CampaignDefinition] {
        (config.campaigns.values.filter(\.trigger.isScheduled) + journeys.scheduledEntries.values).sorted { $0.key < $1.key }
    }

    /// The segment with this key (`<project>/<id>`).
    func segment(_ key: String) -> CompiledSegment? {
        segmentsByProject[ProfileKey.project(of: key)]?.first { $0.key == key }
    }

    /// The segments of `project` that read a field in `changes` (`.everything`: every segment), in key order.
    func segments(project: String, reading changes: Set<ChangeKey>) -> [CompiledSegment] {
        guard let all = segmentsByProject[project], let index = dependents[project] else { return [] }
        if changes.contains(.everything) { return all }
        var positions: [Int] = []
        for change in changes { positions += index[change] ?? [] }
        guard positions.count > 1 else { return positions.map { all[$0] } }
        positions.sort()
        var result: [CompiledSegment] = []
        result.reserveCapacity(positions.count)
        var previous = -1
        for position in positions where position != previous {
            result.append(all[position])
            previous = position
        }
        return result
    }
}
