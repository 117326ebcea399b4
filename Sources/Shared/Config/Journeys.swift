import Crypto
import Foundation

/// `kind: journey` (docs/journeys.md): a campaign with more than one step. An entry (the campaigns' event or segment
/// triggers), an audience, re-entry and exit rules, and a forward-only graph of named nodes from `start`.
package struct JourneyDefinition: Sendable {
    /// How often one profile may enter.
    package enum Reentry: Sendable, Equatable {
        /// Once per profile, ever (per journey, whatever its version).
        case never
        /// Again once this long has passed since its last entry.
        case after(TimeInterval)
        /// Again while fewer than this many of its instances are in flight (1 to `maxConcurrentLimit`).
        case maxConcurrent(Int)
    }

    /// What takes a profile out of the journey at once, at whatever node it is.
    package enum ExitRule: Sendable, Equatable {
        /// An event by name, with an optional condition on it (`event.…`, `entry.…`).
        case event(name: String, condition: SegmentExpression?)
        case segmentEntry(segment: String)
        case segmentExit(segment: String)
    }

    /// One way out of a `wait`, in order: the first that happens wins.
    package enum WaitBranch: Sendable, Equatable {
        /// An event of the profile, with an optional condition that may compare with the entry event
        /// (`event.cart_id = entry.cart_id`).
        case event(name: String, condition: SegmentExpression?, next: String)
        /// The profile is in the segment (at once if it already is when the wait starts).
        case segment(String, next: String)

        package var next: String {
            switch self {
            case .event(_, _, let next), .segment(_, let next): next
            }
        }
    }

    /// A `delay`: a duration, or until a local time of day in the profile's time zone (on some weekdays).
    package enum Delay: Sendable, Equatable {
        case duration(TimeInterval)
        /// `weekdays`: 0 Sunday to 6 Saturday; empty: any day.
        case until(LocalTime, weekdays: Set<Int>)
    }

    package struct Arm: Sendable, Equatable {
        package var name: String
        package var percent: Int
        package var next: String

        package init(name: String, percent: Int, next: String) {
            self.name = name
            self.percent = percent
            self.next = next
        }
    }

    package enum Step: Sendable, Equatable {
        case delay(Delay, next: String)
        case wait(branches: [WaitBranch], timeout: TimeInterval, timeoutNext: String)
        /// Profile conditions in order (`c.`, `b.`, … and `entry.`), the first that holds wins; `otherwise` else.
        case split(branches: [(condition: SegmentExpression, next: String)], otherwise: String)
        /// Weighted arms, assigned deterministically per profile (`JourneyArms`).
        case experiment(arms: [Arm])
        case message(CampaignDefinition.Message, next: String)
        /// Attributes of the profile set through the write path (`journey_update`), then `next` once applied.
        case update(ProfileEdit, next: String)
        /// A content card (`kind: content_card`, by id) put into the profile's feed, as a campaign's `cards` are.
        case card(String, next: String)
        case exit

        /// Every node this one may lead to, in order.
        package var successors: [String] {
            switch self {
            case .delay(_, let next), .message(_, let next), .update(_, let next), .card(_, let next): [next]
            case .wait(let branches, _, let timeoutNext): branches.map(\.next) + [timeoutNext]
            case .split(let branches, let otherwise): branches.map(\.next) + [otherwise]
            case .experiment(let arms): arms.map(\.next)
            case .exit: []
            }
        }

        /// Whether instances stay at such a node for a while: a delay, a wait, an update while its write comes back
        /// (the others are walked through in the step that reaches them).
        package var holds: Bool {
            switch self {
            case .delay, .wait, .update: true
            case .split, .experiment, .message, .card, .exit: false
            }
        }

        package var kind: String {
            switch self {
            case .delay: "delay"
            case .wait: "wait"
            case .split: "split"
            case .experiment: "experiment"
            case .message: "message"
            case .update: "update"
            case .card: "card"
            case .exit: "exit"
            }
        }

        package static func == (left: Step, right: Step) -> Bool {
            switch (left, right) {
            case (.delay(let a, let x), .delay(let b, let y)): a == b && x == y
            case (.wait(let a, let t, let x), .wait(let b, let u, let y)): a == b && t == u && x == y
            case (.split(let a, let x), .split(let b, let y)):
                x == y && a.count == b.count && zip(a, b).allSatisfy { $0.condition == $1.condition && $0.next == $1.next }
            case (.experiment(let a), .experiment(let b)): a == b
            case (.message(let a, let x), .message(let b, let y)): a == b && x == y
            case (.update(let a, let x), .update(let b, let y)): a == b && x == y
            case (.card(let a, let x), .card(let b, let y)): a == b && x == y
            case (.exit, .exit): true
            default: false
            }
        }
    }

    package struct Node: Sendable, Equatable {
        package var name: String
        package var step: Step
        /// Where it is written (0 for a node read from `herald.config` or a partition's stored version).
        package var line: Int
    }

    /// The published limits (docs/journeys.md, "Limits").
    package static let maxNodes = 100
    package static let maxBranches = 8
    package static let maxConcurrentLimit = 25
    /// Of the events journeys name, how many of one profile within one second journeys follow (`JourneyEventRate`).
    package static let maxEventsPerSecond = 50
    package static let shortestWait: TimeInterval = 60
    package static let longestWait: TimeInterval = 366 * 86_400

    package var id: String
    package var project: String
    package var name: String
    package var enabled = true
    /// Marketing messages need the channel's marketing subscription and follow quiet hours and frequency caps.
    package var marketing = true
    /// An event, a segment entry or exit, the API (`POST /v1/journeys/trigger`), or a schedule (an instant, a period,
    /// or a local time of day), as campaigns have (`CampaignDefinition.Trigger`).
    package var entry: CampaignDefinition.Trigger
    /// The segment a profile must be in to enter.
    package var audience: String?
    package var reentry: Reentry = .never
    package var exits: [ExitRule] = []
    package var start: String
    /// By name.
    package var nodes: [String: Node]
    package var quietHours: QuietHoursSetting = .project
    package var ignoreFrequencyCap = false
    package var tags: [String] = []
    /// `migrate: {nodes: {old: new | exit}}`: the instances in flight on an earlier version move onto this one, each
    /// from its node to the node mapped (`exit`: it ends), or to the node of the same name; nil: they finish the
    /// version they entered.
    package var migration: [String: String]?
    /// The migration target that ends an instance (unless the journey has a node of that name).
    package static let exitTarget = "exit"
    /// The definition as published, whose digest is its version: what a partition keeps so that the profiles in
    /// flight finish the version they entered.
    package let source: JSONValue
    /// 12 hex characters of SHA-256 over `source`: every edit is another version, the same text on every instance is
    /// the same one. Computed once, not at every step that names it.
    package let version: String
    package var origin: ConfigOrigin
    package var key: String { "\(project)/\(id)" }

    init(
        id: String, project: String, name: String, entry: CampaignDefinition.Trigger, audience: String?, start: String,
        nodes: [String: Node], source: JSONValue, origin: ConfigOrigin
    ) {
        self.id = id
        self.project = project
        self.name = name
        self.entry = entry
        self.audience = audience
        self.start = start
        self.nodes = nodes
        self.source = source
        version = SHA256.hash(data: Data(source.serialized)).prefix(6).hexString
        self.origin = origin
    }

    /// The campaign a message (or card) node's decision runs as: the campaigns' rules (subscription, quiet hours,
    /// frequency caps, Liquid, reports) with the journey's settings. Its key is `<project>/<journey>/<node>`: never a
    /// campaign's (an identifier has no `/`), one per node for the reports and metrics. Nil for the other nodes.
    package func campaign(node: String) -> CampaignDefinition? {
        let messages: [CampaignDefinition.Message], cards: [String]
        switch nodes[node]?.step {
        case .message(let message, _)?: (messages, cards) = ([message], [])
        case .card(let card, _)?: (messages, cards) = ([], [card])
        default: return nil
        }
        var campaign = CampaignDefinition(
            id: "\(id)/\(node)", project: project, name: "\(name) · \(node)", enabled: true, marketing: marketing, trigger: .api,
            audience: nil, delay: nil, cancelOn: [], expiresAfter: nil, reeligibility: .always, messages: messages, origin: origin)
        campaign.cards = cards
        campaign.quietHours = quietHours
        campaign.ignoreFrequencyCap = ignoreFrequencyCap
        campaign.tags = tags
        campaign.journey = id
        return campaign
    }

    /// Where an instance at `node` of an earlier version goes with this version's migration: the node mapped, else
    /// the node of the same name; `exitTarget` when mapped to end; nil when neither (it cannot move).
    package func migrationTarget(from node: String) -> String? {
        if let mapped = migration?[node] { return mapped }
        return nodes[node] != nil ? node : nil
    }

    /// The nodes of `published` that instances may wait at (delays, waits, and updates while their write is applied)
    /// that this version's migration can move no instance from: neither mapped nor in this version. Empty without a
    /// migration (instances finish their version).
    package func migrationProblems(from published: JourneyDefinition) -> [String] {
        guard migration != nil else { return [] }
        return published.nodes.values.sorted { $0.name < $1.name }.compactMap { node in
            node.step.holds && migrationTarget(from: node.name) == nil
                ? "migrate.nodes: instances may wait at \(node.name) (version \(published.version)), which is neither in this version nor mapped"
                : nil
        }
    }

    /// A version a partition kept (`source`), read again; nil if this build cannot read it whole.
    package static func stored(_ source: JSONValue) -> JourneyDefinition? {
        var reader = ConfigReader(file: "journey_versions")
        guard case .journey(let journey)? = reader.object(ConfigNode(json: source)), reader.issues.isEmpty else { return nil }
        return journey
    }

    /// A journey entered on a schedule runs it as the campaigns' schedules run (`ScheduledRuns`, `LocalTimeRuns`: the
    /// audience paged per partition, each run once, a missed run skipped after an hour): this campaign carries the
    /// schedule, and each member its run reaches enters the journey (`enters`). Its key `<project>/<journey>/@entry`
    /// is never a campaign's nor a message node's. Nil for the other entries.
    package var scheduledEntry: CampaignDefinition? {
        guard entry.isScheduled else { return nil }
        var campaign = CampaignDefinition(
            id: "\(id)/@entry", project: project, name: "\(name) · entry", enabled: enabled, marketing: marketing, trigger: entry,
            audience: audience, delay: nil, cancelOn: [], expiresAfter: nil, reeligibility: .always, messages: [], origin: origin)
        campaign.enters = key
        return campaign
    }

    /// The events it names: its entry's, its exit rules', its waits' branches'.
    package var eventNames: Set<String> {
        var names: Set<String> = []
        if case .event(let name, _) = entry { names.insert(name) }
        for rule in exits { if case .event(let name, _) = rule { names.insert(name) } }
        for node in nodes.values {
            guard case .wait(let branches, _, _) = node.step else { continue }
            for branch in branches { if case .event(let name, _, _) = branch { names.insert(name) } }
        }
        return names
    }

    /// The message and card nodes' campaigns by key.
    package var messageCampaigns: [String: CampaignDefinition] {
        var campaigns: [String: CampaignDefinition] = [:]
        for node in nodes.keys {
            if let campaign = campaign(node: node) { campaigns[campaign.key] = campaign }
        }
        return campaigns
    }

    /// What is wrong with the graph, each with the line of the node concerned (nodes in the order written): `start`
    /// and every `next` name a node, no cycle, every node reachable from `start`, at most `maxNodes`.
    package static func graphProblems(start: String, nodes: [Node]) -> [(line: Int, message: String)] {
        var problems: [(line: Int, message: String)] = []
        let byName = Dictionary(nodes.map { ($0.name, $0) }) { first, _ in first }
        if nodes.count > maxNodes { problems.append((nodes[maxNodes].line, "nodes: \(nodes.count), at most \(maxNodes)")) }
        if byName[start] == nil { problems.append((0, "start: no node \(start)")) }
        for node in nodes {
            for next in node.step.successors where byName[next] == nil {
                problems.append((node.line, "nodes.\(node.name): next: no node \(next)"))
            }
        }
        guard problems.isEmpty else { return problems }
        // Depth-first from start: a node met again while on the path is a cycle.
        enum Mark { case onPath, done }
        var marks: [String: Mark] = [:]
        var cycles: [(line: Int, message: String)] = []
        func visit(_ name: String, path: [String]) {
            if marks[name] == .done { return }
            if marks[name] == .onPath {
                let loop = path[(path.firstIndex(of: name) ?? 0)...] + [name]
                cycles.append((byName[name]!.line, "nodes.\(name): a cycle (\(loop.joined(separator: " → "))); a journey only goes forward"))
                return
            }
            marks[name] = .onPath
            for next in byName[name]!.step.successors { visit(next, path: path + [name]) }
            marks[name] = .done
        }
        visit(start, path: [])
        problems += cycles
        for node in nodes where marks[node.name] == nil {
            problems.append((node.line, "nodes.\(node.name): not reachable from start (\(start))"))
        }
        return problems
    }
}
