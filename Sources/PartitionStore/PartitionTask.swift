import Foundation
import Shared

/// One partition number in this instance, as its `PartitionOwner` keeps it (Kafka Streams' `StreamTask`): where it
/// stands (`PartitionState`, moved only along `PartitionState.canMove`), the topic-partitions assigned under it, its
/// database, the work in progress its revocation waits for, its outbox flushes, how far its changelog is produced,
/// and its failure.
///
/// Isolated to its owner actor (a class that is not `Sendable`: only the owner holds it). Made at the number's first
/// assignment and kept for the instance's life: some of its facts outlive an assignment (attempts a drain did not wait
/// for end after the partition went; a lost partition's outbox is still produced, its changelog not).
final class PartitionTask {
    let number: Int32
    /// nil: not assigned here.
    private(set) var state: PartitionState?
    /// The topic-partitions assigned under the number.
    private(set) var topics: [TopicPartition] = []
    /// Open from `opening` to the end of `draining` (nil while restoring, or paused before it could open).
    var database: PartitionDatabase?

    /// Units of work in progress (`PartitionOwner.hold`/`release`): kept across assignments.
    private(set) var work = 0
    private var workWaiters: [CheckedContinuation<Void, Never>] = []

    /// When a produce first left the outbox holding records (nil: nothing waits).
    var unflushedSince: ContinuousClock.Instant?
    /// The flush in progress (one at a time), run again while `flushRequested`.
    var flushTask: Task<Void, Never>?
    var flushRequested = false
    /// A restore going on outside the rebalance callback, until it ends.
    var laterRestore: Task<Void, Never>?

    /// Lost: its outbox is still produced, but its changelog is the new owner's to write, and what it wrote is not
    /// acted on any more (`PartitionOwner.changelogHolds`), until the number is assigned here again.
    var changelogHeld = false
    /// The changelog sequence number produced through (0: none yet in this database).
    private(set) var changelogThrough: Int64 = 0
    private var changelogWaiters: [(end: Int64, waiter: CheckedContinuation<Void, Never>)] = []

    /// Its database fails: paused, and tried again at `retryAt`.
    private(set) var fault: PartitionFault?
    /// Failures in a row, kept across a resume until a batch is applied.
    private var failuresInARow = 0

    init(number: Int32) { self.number = number }

    // MARK: State

    /// Moves an assigned partition to `next`; false (nothing changed) when it is not assigned or `PartitionState`
    /// does not list the transition.
    func move(to next: PartitionState) -> Bool {
        guard let state, PartitionState.canMove(from: state, to: next) else { return false }
        self.state = next
        return true
    }

    /// (Re)assigned in `next`, from not assigned or from the state it was in; false (nothing changed) when
    /// `PartitionState` does not list the transition.
    func enter(_ next: PartitionState, topics: [TopicPartition], database: PartitionDatabase?) -> Bool {
        guard PartitionState.canMove(from: state, to: next) else { return false }
        state = next
        self.topics = topics
        self.database = database
        return true
    }

    /// Assigned again with the database it has open (a resume, or an assignment that found it open).
    func reassigned(_ topics: [TopicPartition]) { self.topics = topics }

    /// No longer assigned here (revoked, lost, or its opening failed); returns its database, still open.
    func leave() -> PartitionDatabase? {
        let open = database
        state = nil
        topics = []
        database = nil
        return open
    }

    // MARK: Work

    func hold(_ units: Int) { work += units }

    func release(_ units: Int) {
        guard work > 0 else { return }
        guard work > units else {
            work = 0
            endWorkWaits()
            return
        }
        work -= units
    }

    /// Resumed when the work is over, or at `endWorkWaits` (the drain's timeout).
    func waitForWork(_ waiter: CheckedContinuation<Void, Never>) {
        guard work > 0 else { return waiter.resume() }
        workWaiters.append(waiter)
    }

    /// How many wait for the work to end (a drain, at most one at a time).
    var waitingForWork: Int { workWaiters.count }

    func endWorkWaits() {
        let waiting = workWaiters
        workWaiters = []
        for waiter in waiting { waiter.resume() }
    }

    // MARK: Changelog

    /// A database restored anew numbers its changelog from the start again.
    func changelogRestarts() { changelogThrough = 0 }

    func changelogProduced(through end: Int64) {
        changelogThrough = max(changelogThrough, end)
        endChangelogWaits { $0 <= end }
    }

    /// Resumed when the changelog is produced through `end`, or when the flush round ends (`endChangelogWaits`).
    func waitForChangelog(through end: Int64, _ waiter: CheckedContinuation<Void, Never>) {
        changelogWaiters.append((end, waiter))
    }

    /// How many wait for the changelog (the notifier's attempts, before their provider call).
    var waitingForChangelog: Int { changelogWaiters.count }

    func endChangelogWaits(where ready: (Int64) -> Bool = { _ in true }) {
        let waiting = changelogWaiters
        changelogWaiters = waiting.filter { !ready($0.end) }
        for waiting in waiting where ready(waiting.end) { waiting.waiter.resume() }
    }

    // MARK: Failure

    var isPaused: Bool { fault != nil }

    /// Records a failure; returns the fault, and whether the partition was running until now.
    func failed(_ error: any Error, now: ContinuousClock.Instant = .now) -> (PartitionFault, newly: Bool) {
        failuresInARow += 1
        let newly = fault == nil
        let fault = PartitionFault(
            error: "\(error)", failures: failuresInARow, retryAt: now + PartitionFault.delay(afterFailures: failuresInARow))
        self.fault = fault
        return (fault, newly)
    }

    /// Whether the paused partition is due for another try; if so, it is marked as being resumed.
    func takeRetry(now: ContinuousClock.Instant = .now) -> Bool {
        guard let fault, !fault.resuming, fault.retryAt <= now else { return false }
        self.fault?.resuming = true
        return true
    }

    /// Runs again (its batches are applied from now on).
    func resumed() { fault = nil }

    /// A batch was applied: its failures in a row end.
    func applied() { failuresInARow = 0 }

    /// Left this instance: its failure is forgotten.
    func forgetFault() {
        fault = nil
        failuresInARow = 0
    }
}
