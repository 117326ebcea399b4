import Foundation
import Shared

/// The orchestrator's answer to `GET /v1/campaigns/{project}/{campaign}/experiment`: the campaign's split and
/// conversions as configured, and its figures summed over every partition. The endpoint encodes it, `herald campaign
/// report` and the tests decode it: one type on both sides, no field read by hand.
package struct ExperimentAnswer: Codable, Sendable, Equatable {
    /// The running experiment's split.
    package struct Split: Codable, Sendable, Equatable {
        package var controlBasisPoints: Int
        /// Variant id → relative weight; empty: the messages as configured (the `message` arm) against the control.
        package var variants: [String: Int]

        enum CodingKeys: String, CodingKey {
            case variants
            case controlBasisPoints = "control_basis_points"
        }

        /// Each arm's expected share of the assignments (`control`, the variants, or `message`).
        package var shares: [String: Double] {
            let control = Double(controlBasisPoints) / 10_000
            var shares: [String: Double] = [:]
            let total = variants.values.reduce(0, +)
            if variants.isEmpty || total == 0 {
                shares[Experiment.message] = 1 - control
            } else {
                for (id, weight) in variants { shares[id] = (1 - control) * Double(weight) / Double(total) }
            }
            if control > 0 { shares[Experiment.control] = control }
            return shares
        }
    }

    /// A conversion the campaign counts, in its configured order.
    package struct CountedConversion: Codable, Sendable, Equatable {
        package var event: String
        package var windowSeconds: Double
        package var sources: Conversion.Sources

        enum CodingKeys: String, CodingKey {
            case event, sources
            case windowSeconds = "window_seconds"
        }
    }

    package var campaign: String
    /// The running experiment version; `none` for a campaign that counts conversions without an experiment; absent for
    /// a campaign with neither.
    package var version: String?
    package var split: Split?
    package var conversions: [CountedConversion]
    package var arms: [ExperimentFigures.Arm]

    package init(campaign: String, version: String?, split: Split?, conversions: [CountedConversion], arms: [ExperimentFigures.Arm]) {
        self.campaign = campaign
        self.version = version
        self.split = split
        self.conversions = conversions
        self.arms = arms
    }

    /// The campaign's answer with its figures over every partition.
    package init(_ campaign: CampaignDefinition, figures: ExperimentFigures) {
        var version: String? = campaign.conversions.isEmpty ? nil : "none"
        var split: Split?
        if let experiment = campaign.experiment {
            version = ExperimentAssignment.version(experiment)
            split = Split(
                controlBasisPoints: experiment.controlBasisPoints,
                variants: Dictionary(experiment.variants.map { ($0.id, $0.weight) }, uniquingKeysWith: { first, _ in first }))
        }
        self.init(
            campaign: campaign.key, version: version, split: split,
            conversions: campaign.conversions.map { CountedConversion(event: $0.event, windowSeconds: $0.window, sources: $0.sources) },
            arms: figures.arms)
    }

    /// The answer's bytes: keys sorted, so that the same figures give the same bytes.
    package func encoded() throws -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return Array(try encoder.encode(self))
    }

    /// Reads an answer; a missing or mistyped field is an error naming it.
    package static func decode(_ bytes: [UInt8]) throws -> ExperimentAnswer {
        try JSONDecoder().decode(ExperimentAnswer.self, from: Data(bytes))
    }
}
