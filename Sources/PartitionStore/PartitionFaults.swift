import Foundation
import GRDB
import Shared

/// What the owner needs of the consumer to stop and restart reading a partition (`KafkaConsumer` is one).
package protocol PartitionFlow: AnyObject, Sendable {
    /// Stops fetching `partitions` (the assignment stays).
    func pause(_ partitions: [TopicPartition]) async throws
    /// Restarts `partitions` from these offsets; records fetched before and not handled yet are dropped.
    func resume(_ partitions: [TopicPartition], at offsets: [TopicPartition: KafkaStartOffset]) async throws
    /// Runs `action` between two batches of the consumer's iteration.
    func betweenBatches(_ action: @escaping @Sendable () async -> Void)
}

extension KafkaConsumer: PartitionFlow {}

/// The failure of a partition whose database fails: paused, and retried with a growing delay.
///
/// A database fails for reasons that concern it alone (its disk is full, its file is corrupt, a migration fails):
/// the partition is paused and reported, the instance's other partitions go on, and the partition is tried again
/// after 1 s, 2 s, 4 s … up to a minute, from the offsets stored with its state (nothing it read after the failure is
/// lost). An error of one record (the code rejects it: `ApplyFailure.isStorage` is false) is not a fault of the
/// database: that record goes to the dead letters and the partition continues (`PartitionDatabase.applyBatch`). Kept
/// by the partition's `PartitionTask`.
struct PartitionFault {
    var error: String
    /// Failures in a row (a resume that fails again counts on).
    var failures: Int
    var retryAt: ContinuousClock.Instant
    /// Whether a resume is queued in the consumer's iteration.
    var resuming = false

    static let maxDelay: Duration = .seconds(60)

    static func delay(afterFailures failures: Int) -> Duration {
        min(.seconds(1 << min(max(failures - 1, 0), 6)), maxDelay)
    }
}

/// Whether an error is the database's (the partition is paused) or a record's (it goes to the dead letters).
package enum ApplyFailure {
    /// SQLite result codes that say the database, not the record, is at fault: it cannot be written (full, read-only,
    /// I/O, locked), it is damaged (corrupt, not a database), or its schema is not what the code expects.
    static let storageCodes: Set<Int32> = Set(
        ([
            .SQLITE_ERROR, .SQLITE_INTERNAL, .SQLITE_PERM, .SQLITE_BUSY, .SQLITE_LOCKED, .SQLITE_NOMEM, .SQLITE_READONLY,
            .SQLITE_IOERR, .SQLITE_CORRUPT, .SQLITE_FULL, .SQLITE_CANTOPEN, .SQLITE_PROTOCOL, .SQLITE_SCHEMA,
            .SQLITE_NOTADB, .SQLITE_NOLFS, .SQLITE_AUTH,
        ] as [ResultCode]).map(\.rawValue))

    package static func isStorage(_ error: any Error) -> Bool {
        guard let error = error as? DatabaseError else { return false }
        return storageCodes.contains(error.resultCode.primaryResultCode.rawValue)
    }
}
