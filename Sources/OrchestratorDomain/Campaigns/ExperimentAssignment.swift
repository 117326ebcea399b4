import Crypto
import Foundation
import Shared

/// Which variant of a campaign's experiment a profile gets (docs/measurement.md, "Assignment"): a pure function of
/// the project, the campaign, the experiment's version and the profile's key, so that a replay, a restart or another
/// instance decides the same, and another implementation can check it against the published vectors
/// (`docs/experiment-vectors.json`).
///
/// - version: `v` and the first 16 hex digits of SHA-256 of the split (`Experiment.splitText`,
///   `control=<basis points>;<id>=<weight>;…` by id);
/// - bucket: the first 8 bytes of SHA-256 of `herald-experiment-1 \n <project> \n <campaign> \n <version> \n
///   <profile key>` (UTF-8, no spaces) as a big-endian unsigned integer, modulo 10,000;
/// - a global holdout group (`kind: holdout`) uses the same bucket with `holdout:<group id>` as the campaign and
///   `holdout` as the version: a member is below the group's share;
/// - the control group is the buckets below the control share (in basis points); the others are split over the
///   variants by id in proportion to their weights: variant `i` takes the positions `p` (bucket minus the control
///   share, over a range of `r` = 10,000 minus the control share) with `p · W < (w₁ + … + wᵢ) · r`, `W` the weights'
///   sum.
package enum ExperimentAssignment {
    package static let scheme = "herald-experiment-1"
    /// Buckets: basis points.
    package static let buckets = 10_000

    package static func version(_ experiment: Experiment) -> String {
        "v" + SHA256.hash(data: Array(experiment.splitText.utf8)).prefix(8).hexString
    }

    package static func bucket(project: String, campaign: String, version: String, profileKey: String) -> Int {
        let text = [scheme, project, campaign, version, profileKey].joined(separator: "\n")
        let digest = Array(SHA256.hash(data: Array(text.utf8)))
        let value = digest.prefix(8).reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        return Int(value % UInt64(buckets))
    }

    /// The variant name of a bucket: `control`, a variant's id, or `message` (an experiment without variants).
    package static func variant(bucket: Int, _ experiment: Experiment) -> String {
        let control = experiment.controlBasisPoints
        if bucket < control { return Experiment.control }
        guard !experiment.variants.isEmpty else { return Experiment.message }
        let position = bucket - control
        let range = buckets - control
        let total = experiment.variants.reduce(0) { $0 + $1.weight }
        var cumulative = 0
        for variant in experiment.variants {
            cumulative += variant.weight
            if position * total < cumulative * range { return variant.id }
        }
        return experiment.variants[experiment.variants.count - 1].id
    }

    /// Whether the profile is in the global holdout group: its bucket over `holdout:<id>` (version `holdout`) below the
    /// group's share. The version does not name the share, so a larger share only adds members.
    package static func isHeldOut(_ profileKey: String, by group: HoldoutGroup) -> Bool {
        bucket(project: group.project, campaign: "holdout:\(group.id)", version: "holdout", profileKey: profileKey) < group.basisPoints
    }

    /// The profile's variant in the campaign's experiment, and the experiment's version.
    package static func assign(_ experiment: Experiment, project: String, campaign: String, profileKey: String)
        -> (version: String, variant: String)
    {
        let version = version(experiment)
        let bucket = bucket(project: project, campaign: campaign, version: version, profileKey: profileKey)
        return (version, variant(bucket: bucket, experiment))
    }
}
