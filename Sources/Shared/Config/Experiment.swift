import Foundation

/// A campaign's experiment (docs/measurement.md): a control group held out, and weighted variants that send each
/// message with a template of their own. Which profile gets what is decided by a documented hash of the project, the
/// campaign, the experiment's version and the profile (`ExperimentAssignment`), so a replay, a restart or another
/// instance decides the same. The version is a digest of the split: changing the control share or a weight starts a
/// new experiment, never moves profiles silently within one.
package struct Experiment: Sendable, Equatable {
    package struct Variant: Sendable, Equatable {
        package var id: String
        /// Relative to the other variants' (50 and 50, or 1 and 1, split the same).
        package var weight: Int

        package init(id: String, weight: Int) {
            self.id = id
            self.weight = weight
        }
    }

    /// The variant name of the profiles held out.
    package static let control = "control"
    /// The variant name of the profiles that get the messages as configured, in an experiment without variants.
    package static let message = "message"

    /// The share of the campaign's audience held out, in basis points (0 to 9,000: 0 to 90 %).
    package var controlBasisPoints: Int
    /// The variants, ordered by id (the order of the configuration file does not move anyone); none: the messages as
    /// configured, against the control group.
    package var variants: [Variant]

    package init(controlBasisPoints: Int, variants: [Variant]) {
        self.controlBasisPoints = controlBasisPoints
        self.variants = variants.sorted { $0.id < $1.id }
    }

    /// What the version digests: `control=<basis points>` and `<id>=<weight>` per variant, by id, joined with `;`.
    package var splitText: String {
        (["control=\(controlBasisPoints)"] + variants.map { "\($0.id)=\($0.weight)" }).joined(separator: ";")
    }

    /// Every variant name a profile can get: `control` (when some are held out), then the variants (or `message`).
    package var names: [String] {
        (controlBasisPoints > 0 ? [Self.control] : []) + (variants.isEmpty ? [Self.message] : variants.map(\.id))
    }
}

/// What a campaign counts as its goal reached (docs/measurement.md, "Conversions"): an event, with an optional
/// condition on it (the trigger syntax), within a window after the profile's assignment.
package struct Conversion: Sendable, Equatable {
    /// Whose writes may convert: the customer's servers only (the default: what a key shipped in every copy of an app
    /// or a web page says is the client's to say, and once bought an experiment's result), or apps and web pages too.
    package enum Sources: String, Codable, Sendable, CaseIterable {
        case server, any
    }

    package var event: String
    package var condition: SegmentExpression?
    package var window: TimeInterval
    package var sources: Sources = .server

    /// Braze's default conversion deadline.
    package static let defaultWindow: TimeInterval = 3 * 86_400
    /// The longest window (Customer.io's; Braze stops at 30 days).
    package static let maxWindow: TimeInterval = 90 * 86_400

    package init(event: String, condition: SegmentExpression?, window: TimeInterval, sources: Sources = .server) {
        self.event = event
        self.condition = condition
        self.window = window
        self.sources = sources
    }
}

/// A global holdout group (`kind: holdout`, docs/measurement.md): a share of a project's profiles that no marketing
/// campaign reaches but those it exempts, so that the whole program's effect can be measured against it. Membership is
/// the experiment's hash over the group (`ExperimentAssignment.isHeldOut`): the same profiles for every campaign.
package struct HoldoutGroup: Sendable, Equatable {
    package var id: String
    package var project: String
    /// The share held out, in basis points (1 to 9,000).
    package var basisPoints: Int
    /// Campaign ids the group does not hold back.
    package var exemptCampaigns: [String]
    /// Campaign tags the group does not hold back: a campaign with any of them is exempt.
    package var exemptTags: [String] = []
    package var origin: ConfigOrigin
    package var key: String { "\(project)/\(id)" }

    package init(id: String, project: String, basisPoints: Int, exemptCampaigns: [String], origin: ConfigOrigin) {
        self.id = id
        self.project = project
        self.basisPoints = basisPoints
        self.exemptCampaigns = exemptCampaigns
        self.origin = origin
    }

    /// Whether the group leaves the campaign alone: transactional, named, or tagged with an exempt tag.
    package func exempts(_ campaign: CampaignDefinition) -> Bool {
        !campaign.marketing || exemptCampaigns.contains(campaign.id) || campaign.tags.contains(where: exemptTags.contains)
    }

    /// The variant name a member's assignment in a campaign records.
    package var variant: String { Self.prefix + id }
    /// The version a member's assignment records: the group and its share (a changed share is another group).
    package var version: String { "\(Self.prefix)\(id):\(basisPoints)" }

    /// What a holdout group's variant and version start with.
    package static let prefix = "holdout:"

    /// Whether an arm's variant or version is a holdout group's.
    package static func names(_ arm: String) -> Bool { arm.hasPrefix(prefix) }
}
