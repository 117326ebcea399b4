import Foundation

/// `journey_update`: the orchestrator's own record to a profile it walks through a journey's `update` node
/// (docs/journeys.md): the node's profile edit, applied through the write path as any edit is (profile limits,
/// contact snapshots, segments and what their entries start), after which the instance goes on from the node.
package struct JourneyUpdate: Sendable, Equatable {
    /// The journey's key (`<project>/<journey>`).
    package var journey: String
    /// The instance: its entry id, and the node it waits at for this write.
    package var entryID: String
    package var node: String
    package var profile: ProfileEdit

    package init(journey: String, entryID: String, node: String, profile: ProfileEdit) {
        self.journey = journey
        self.entryID = entryID
        self.node = node
        self.profile = profile
    }
}
