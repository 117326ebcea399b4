import GRDB
import Synchronization

/// How far a partition database's outbox and changelog went out to the broker, held in memory so that forgetting what
/// was produced costs no transaction of its own (issue 58): a flush round marks what the broker acknowledged
/// (`produced`), the next write transaction of the partition deletes it first thing (`forget`), and a partition with
/// no write for a while has it deleted by the relay's round (`PartitionDatabase.forgetProduced`). A round reads past
/// the marks, so nothing marked is produced twice by this process; rows a crash left undeleted are produced again after
/// a restart, as they were when a crash came between a produce and its delete (outputs carry deterministic ids and are
/// deduped downstream; a restore applies a row image twice to the same effect).
///
/// Shared by the copies of a `PartitionDatabase` value; a database opened again starts from nothing marked.
final class ProducedMarks: Sendable {
    /// What the broker acknowledged, and what the database has deleted of it.
    struct Marks: Equatable, Sendable {
        /// The outbox id produced through (0: none).
        var outbox: Int64 = 0
        /// The changelog sequence number produced through (0: none), and the topic's next offset after it.
        var changelog: Int64 = 0
        var nextOffset: Int64 = 0
    }

    private struct State {
        var produced = Marks()
        var deleted = Marks()
        /// When a mark first went ahead of what was deleted (nil: nothing left to delete).
        var waitingSince: ContinuousClock.Instant?
    }

    private let state = Mutex(State())

    /// Where the next flush round reads from.
    var produced: Marks { state.withLock { $0.produced } }

    /// The broker acknowledged the outbox through `outbox` and the changelog through `changelog` (each nil: that queue
    /// had nothing in the round).
    func produced(outbox: Int64?, changelog: (seq: Int64, nextOffset: Int64)?) {
        state.withLock { state in
            if let outbox { state.produced.outbox = max(state.produced.outbox, outbox) }
            if let changelog {
                state.produced.changelog = max(state.produced.changelog, changelog.seq)
                state.produced.nextOffset = max(state.produced.nextOffset, changelog.nextOffset)
            }
            if state.produced != state.deleted, state.waitingSince == nil { state.waitingSince = .now }
        }
    }

    /// Deletes, in the caller's write transaction, what was marked produced and is not deleted yet; returns the marks
    /// deleted through, for `deleted` once the transaction committed (nil: nothing to delete).
    func forget(_ db: Database) throws -> Marks? {
        let (produced, deleted) = state.withLock { ($0.produced, $0.deleted) }
        guard produced != deleted else { return nil }
        if produced.outbox > deleted.outbox { try Outbox.delete(db, through: produced.outbox) }
        if produced.changelog > deleted.changelog {
            try ChangelogCapture.produced(db, through: produced.changelog, nextOffset: produced.nextOffset)
        }
        return produced
    }

    /// The transaction that ran `forget` committed: its marks are deleted.
    func deleted(_ marks: Marks) {
        state.withLock { state in
            state.deleted.outbox = max(state.deleted.outbox, marks.outbox)
            state.deleted.changelog = max(state.deleted.changelog, marks.changelog)
            state.deleted.nextOffset = max(state.deleted.nextOffset, marks.nextOffset)
            state.waitingSince = state.produced == state.deleted ? nil : .now
        }
    }

    /// How long what was produced has waited for a write to delete it (nil: nothing waits).
    var waiting: Duration? { state.withLock { $0.waitingSince.map { .now - $0 } } }
}
