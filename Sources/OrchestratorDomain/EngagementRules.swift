import Foundation
import Shared

/// The configuration as the partitions apply it: segments per project with the fields they read, and campaigns per
/// trigger. Built once per configuration change; shared by every partition.
package struct EngagementRules: Sendable {
    package let config: HeraldConfiguration
    /// The clock segments and campaigns read (`now` in conditions, delays, schedules); tests move it by hand.
    package let clock: @Sendable () -> Date
    let segmentsByProject: [String: [CompiledSegment]]
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

    package init(config: HeraldConfiguration, clock: @escaping @Sendable () -> Date = { Date() }) {
        self.config = config
        self.clock = clock
        var segments: [String: [CompiledSegment]] = [:]
        for segment in config.segments.values.sorted(by: { $0.key < $1.key }) {
            segments[segment.project, default: []].append(CompiledSegment(segment))
        }
        segmentsByProject = segments
        var events: [String: [CampaignDefinition]] = [:]
        var entries: [String: [CampaignDefinition]] = [:]
        var exits: [String: [CampaignDefinition]] = [:]
        var cancels: [String: [CampaignDefinition]] = [:]
        for campaign in config.campaigns.values.sorted(by: { $0.key < $1.key }) where campaign.enabled {
            switch campaign.trigger {
            case .event(let name, _): events["\(campaign.project)/\(name)", default: []].append(campaign)
            case .segmentEntry(let segment): entries["\(campaign.project)/\(segment)", default: []].append(campaign)
            case .segmentExit(let segment): exits["\(campaign.project)/\(segment)", default: []].append(campaign)
            case .schedule, .api: break
            }
            for name in campaign.cancelOn { cancels["\(campaign.project)/\(name)", default: []].append(campaign) }
        }
        eventCampaigns = events
        entryCampaigns = entries
        exitCampaigns = exits
        cancellers = cancels
    }

    /// The segments of `project` that read a field in `changes` (`*`: every segment).
    func segments(project: String, reading changes: Set<String>) -> [CompiledSegment] {
        guard let all = segmentsByProject[project] else { return [] }
        if changes.contains("*") { return all }
        return all.filter { segment in segment.dependencies.contains { Self.affects(changes, $0) } }
    }

    /// Whether a change to one of `changes` can change a value under `dependency`. A change key is a path's field
    /// (`c.plan`, `e.PURCHASED`, `b.language`), a whole namespace (`b`, `t`, `email`, `sms`, `push`) or `*`.
    static func affects(_ changes: Set<String>, _ dependency: String) -> Bool {
        if changes.contains(dependency) { return true }
        if let dot = dependency.firstIndex(of: "."), changes.contains(String(dependency[..<dot])) { return true }
        return false
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
