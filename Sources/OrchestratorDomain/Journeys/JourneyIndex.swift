import Foundation
import Shared

/// The journeys of a configuration by what starts, ends or moves them: built once per configuration
/// (`EngagementRules`).
struct JourneyIndex: Sendable {
    /// `<project>/<EVENT>` → the enabled journeys the event enters.
    let byEntryEvent: [String: [JourneyDefinition]]
    /// Segment key → the enabled journeys entering it enters, and leaving it.
    let bySegmentEntry: [String: [JourneyDefinition]]
    let bySegmentExit: [String: [JourneyDefinition]]
    /// Projects with a journey: their profiles' instances are looked at when an event or a segment change comes.
    let projects: Set<String>
    /// The current versions' message nodes as campaigns, by key (a quiet-hours hold finds its campaign again).
    let messageCampaigns: [String: CampaignDefinition]
    /// `<project>/<EVENT>` of every event a current version names (entries, waits' branches, exit rules): what the
    /// per-profile limit of events per second counts.
    let namedEvents: Set<String>
    /// The scheduled entries of journeys entered on a schedule (`JourneyDefinition.scheduledEntry`), by key.
    let scheduledEntries: [String: CampaignDefinition]

    init(_ journeys: [String: JourneyDefinition]) {
        var events: [String: [JourneyDefinition]] = [:]
        var entries: [String: [JourneyDefinition]] = [:]
        var exits: [String: [JourneyDefinition]] = [:]
        var campaigns: [String: CampaignDefinition] = [:]
        var scheduled: [String: CampaignDefinition] = [:]
        var named: Set<String> = []
        for journey in journeys.values.sorted(by: { $0.key < $1.key }) {
            campaigns.merge(journey.messageCampaigns) { first, _ in first }
            if let entry = journey.scheduledEntry { scheduled[entry.key] = entry }
            named.formUnion(journey.eventNames.map { "\(journey.project)/\($0)" })
            guard journey.enabled else { continue }
            switch journey.entry {
            case .event(let name, _): events["\(journey.project)/\(name)", default: []].append(journey)
            case .segmentEntry(let segment): entries["\(journey.project)/\(segment)", default: []].append(journey)
            case .segmentExit(let segment): exits["\(journey.project)/\(segment)", default: []].append(journey)
            default: break
            }
        }
        byEntryEvent = events
        bySegmentEntry = entries
        bySegmentExit = exits
        projects = Set(journeys.values.map(\.project))
        messageCampaigns = campaigns
        scheduledEntries = scheduled
        namedEvents = named
    }
}
