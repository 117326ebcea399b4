import Foundation
import Shared

/// The configuration as the partitions apply it: segments per project with the fields they read, and campaigns per
/// trigger. Built once per configuration change; shared by every partition.
package struct EngagementRules: Sendable {
    package let config: HeraldConfiguration
    /// The clock segments and campaigns read (`now` in conditions, delays, schedules); tests move it by hand.
    package let clock: @Sendable () -> Date
    /// How many partitions the keyed topics have: a campaign's send rate limit is shared evenly by them.
    package let partitions: Int
    let segmentsByProject: [String: [CompiledSegment]]
    /// Per project: change key → positions in `segmentsByProject` of the segments a change to it can affect (built once,
    /// so that a write looks up its change keys instead of testing every segment's dependencies).
    let dependents: [String: [String: [Int]]]
    /// `<project>/<EVENT>` → campaigns triggered by the event.
    let eventCampaigns: [String: [CampaignDefinition]]
    /// Segment key → campaigns triggered by entering it, and by leaving it.
    let entryCampaigns: [String: [CampaignDefinition]]
    let exitCampaigns: [String: [CampaignDefinition]]
    /// `<project>/<EVENT>` → campaigns whose waiting delays the event cancels.
    let cancellers: [String: [CampaignDefinition]]

    package static let none = EngagementRules(config: HeraldConfiguration())

    /// Whether there is anything to evaluate (no segments and no campaigns: writes skip the engine).
    var isActive: Bool { !config.segments.isEmpty || !config.campaigns.isEmpty }

    package init(config: HeraldConfiguration, clock: @escaping @Sendable () -> Date = { Date() }, partitions: Int = 1) {
        self.config = config
        self.clock = clock
        self.partitions = max(1, partitions)
        var segments: [String: [CompiledSegment]] = [:]
        for segment in config.segments.values.sorted(by: { $0.key < $1.key }) {
            segments[segment.project, default: []].append(CompiledSegment(segment))
        }
        segmentsByProject = segments
        dependents = segments.mapValues(Self.dependents)
        var events: [String: [CampaignDefinition]] = [:]
        var entries: [String: [CampaignDefinition]] = [:]
        var exits: [String: [CampaignDefinition]] = [:]
        var cancels: [String: [CampaignDefinition]] = [:]
        for campaign in config.campaigns.values.sorted(by: { $0.key < $1.key }) where campaign.enabled {
            switch campaign.trigger {
            case .event(let name, _): events["\(campaign.project)/\(name)", default: []].append(campaign)
            case .segmentEntry(let segment): entries["\(campaign.project)/\(segment)", default: []].append(campaign)
            case .segmentExit(let segment): exits["\(campaign.project)/\(segment)", default: []].append(campaign)
            case .schedule, .localSchedule, .api: break
            }
            for name in campaign.cancelOn { cancels["\(campaign.project)/\(name)", default: []].append(campaign) }
        }
        eventCampaigns = events
        entryCampaigns = entries
        exitCampaigns = exits
        cancellers = cancels
    }

    /// The segments of `project` that read a field in `changes` (`*`: every segment), in key order.
    func segments(project: String, reading changes: Set<String>) -> [CompiledSegment] {
        guard let all = segmentsByProject[project], let index = dependents[project] else { return [] }
        if changes.contains("*") { return all }
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

    /// Which change keys affect which segments. A change key is a path's field (`c.plan`, `e.PURCHASED`, `b.language`),
    /// a whole namespace (`b`, `t`, `email`, `sms`, `push`) or `*`; it affects a segment that depends on it, and a
    /// namespace affects every segment that depends on one of its fields.
    static func dependents(_ segments: [CompiledSegment]) -> [String: [Int]] {
        var index: [String: [Int]] = [:]
        for (position, segment) in segments.enumerated() {
            var keys: Set<String> = []
            for dependency in segment.dependencies {
                keys.insert(dependency)
                if let dot = dependency.firstIndex(of: ".") { keys.insert(String(dependency[..<dot])) }
            }
            for key in keys { index[key, default: []].append(position) }
        }
        return index
    }
}

/// A segment with the change keys it depends on.
struct CompiledSegment: Sendable {
    let definition: SegmentDefinition
    let dependencies: Set<String>

    init(_ definition: SegmentDefinition) {
        self.definition = definition
        dependencies = Set(definition.condition.paths.map(Self.dependency))
    }

    var key: String { definition.key }

    /// The change key a path depends on: `c.<name>`, `e.<EVENT>`, `b.<name>`, or the namespace for `t`, `email`,
    /// `sms` and `push`.
    static func dependency(_ path: SegmentPath) -> String {
        switch path.namespace {
        case "c", "e", "b": "\(path.namespace).\(path.names[0])"
        default: path.namespace
        }
    }
}
