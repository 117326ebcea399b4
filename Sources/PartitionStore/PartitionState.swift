/// Where an assigned partition stands in this instance (Kafka Streams' `Task.State`): one state per partition number,
/// kept by `PartitionOwner`, moving along
///
///     restoring → opening → running ⇄ paused
///                              ↘       ↙
///                              draining → (closed: gone)
///
/// `restoring` only with a changelog; a partition whose database cannot be opened is `paused` from `opening`.
package enum PartitionState: String, Sendable, Equatable {
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
}
