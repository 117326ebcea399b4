/// Where an assigned partition stands in this instance (Kafka Streams' `Task.State`): one state per partition number,
/// kept by `PartitionOwner`, moving along
///
///     restoring → opening → running ⇄ paused
///                              ↘       ↙
///                              draining → (closed: gone)
///
/// `restoring` only with a changelog; a partition whose database cannot be opened is `paused` from `restoring` or
/// `opening`, and a paused one that never opened is restored and opened again when it is retried. `canMove(from:to:)`
/// lists every transition the owner makes; the owner refuses any other and reports it (`PartitionOwner.move`).
package enum PartitionState: String, Sendable, Equatable, CaseIterable {
    /// Being levelled with its changelog before anything of it is processed (`PartitionCatchUp`).
    case restoring
    /// Its database is open and the service prepares it (`PartitionHooks.partitionOpened`).
    case opening
    /// Its records are applied and work runs on it (`PartitionOwner.run(on:)`).
    case running
    /// Its database fails: its records wait (the consumer paused it) and it is tried again (`PartitionFaults`).
    case paused
    /// Being revoked: no new work starts; the work in progress finishes (`PartitionHooks.partitionDrained`), the
    /// outbox is produced, the database closed.
    case draining

    /// Whether a partition may move from `state` (nil: not assigned here) to `next` (Kafka Streams'
    /// `Task.State.isValidTransition`). Leaving for good (revoked, lost, closed) is always allowed and is not a state.
    package static func canMove(from state: PartitionState?, to next: PartitionState) -> Bool {
        switch (state, next) {
        case (nil, .restoring), (nil, .opening), (nil, .paused): true
        // A restore deferred past the rebalance's budget starts again where it stopped.
        case (.restoring?, .restoring), (.restoring?, .opening), (.restoring?, .paused): true
        // Without a changelog a partition is created `opening`, and set so again once its database is open.
        case (.opening?, .opening), (.opening?, .running), (.opening?, .paused): true
        // A resumed partition that was open is set running again after its reopening found it open.
        case (.running?, .running), (.running?, .paused), (.running?, .draining): true
        case (.paused?, .paused), (.paused?, .restoring), (.paused?, .opening), (.paused?, .running), (.paused?, .draining): true
        default: false
        }
    }
}
