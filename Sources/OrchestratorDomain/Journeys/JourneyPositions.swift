import Foundation
import GRDB
import Shared

/// Who is where in a journey (docs/journeys.md, "Who is where"): a partition's share, summed or merged over every
/// partition by the endpoint that asks them (`JourneyEndpoints`). Both read through the index on
/// `(journey, version, node, profile_key)`.
package enum JourneyPositions {
    /// How many instances wait at a node of a version.
    package struct Count: Codable, Sendable, Equatable {
        package var version: String
        package var node: String
        package var count: Int
    }

    /// One instance at a node.
    package struct Position: Codable, Sendable, Equatable {
        package var profileKey: String
        package var version: String
        /// When it reached the node, and when it entered the journey.
        package var since: Date
        package var enteredAt: Date

        enum CodingKeys: String, CodingKey {
            case profileKey = "profile_key", version, since, enteredAt = "entered_at"
        }
    }

    /// The most a page holds.
    package static let maxPage = 1_000

    /// The partition's counts per version and node (in flight only).
    package static func counts(_ db: Database, journey: String) throws -> [Count] {
        try JourneyInstancesTable(db).waiting(journey: journey).map { Count(version: $0.version, node: $0.node, count: $0.count) }
    }

    /// The partition's first `limit` instances at `node` (of every version kept here) after the profile key `after`,
    /// in profile-key order: one keyset read per version.
    package static func page(_ db: Database, journey: String, node: String, after: String, limit: Int) throws -> [Position] {
        let table = JourneyInstancesTable(db)
        var positions: [Position] = []
        for version in try table.versions(journey: journey) {
            positions += try table.atNode(journey: journey, version: version, node: node, after: after, limit: limit).map {
                Position(profileKey: $0.profileKey, version: $0.version, since: $0.since, enteredAt: $0.enteredAt)
            }
        }
        return Array(positions.sorted { $0.profileKey < $1.profileKey }.prefix(limit))
    }

    /// Counts of several partitions summed, in version then node order.
    package static func sum(_ parts: [[Count]]) -> [Count] {
        var totals: [String: Count] = [:]
        for count in parts.joined() {
            totals["\(count.version) \(count.node)", default: Count(version: count.version, node: count.node, count: 0)].count += count.count
        }
        return totals.values.sorted { ($0.version, $0.node) < ($1.version, $1.node) }
    }

    /// Pages of several partitions merged: the first `limit` in profile-key order.
    package static func merge(_ parts: [[Position]], limit: Int) -> [Position] {
        Array(parts.joined().sorted { $0.profileKey < $1.profileKey }.prefix(limit))
    }
}
