import Foundation
import Shared

/// An `experiment` node's arm for a profile: the campaign experiments' deterministic bucket (`ExperimentAssignment`)
/// over the journey and the node, so that a profile entering again takes the same arm, and every instance agrees.
enum JourneyArms {
    static func arm(_ arms: [JourneyDefinition.Arm], journey: String, node: String, profileKey: String) -> JourneyDefinition.Arm {
        let bucket = ExperimentAssignment.bucket(
            project: ProfileKey.project(of: journey), campaign: journey, version: node, profileKey: profileKey)
        // Percents in basis points, arms in the order written.
        var upper = 0
        for arm in arms {
            upper += arm.percent * 100
            if bucket < upper { return arm }
        }
        return arms[arms.count - 1]
    }
}
