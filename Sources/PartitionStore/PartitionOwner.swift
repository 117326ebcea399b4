import Foundation
import GRDB
import Logging
import Metrics
import Shared
import Synchronization

/// The service's part in a partition's life, called by `PartitionOwner`.
package protocol PartitionHooks: AnyObject, Sendable {
    /// The partition's database was opened for a new assignment, before anything of the partition is consumed (and
    /// before the assignment is applied). Recover what a stop left (attempts in flight, deferred records), decide
    /// whether the partition waits for something. Throwing fails the assignment.
    func partitionOpened(_ database: PartitionDatabase, assigned: [TopicPartition]) async throws
    /// The partition is being taken away and its work is over (`PartitionOwner.run(on:)`, `hold`), or the drain timed
    /// out with `workLeft` units still out: record what the work left. Its database is still open; the owner produces
    /// the outbox after this returns. Not called for a lost partition (another member owns it already).
    func partitionDrained(_ partition: Int32, workLeft: Int) async
    /// The partition's database was closed: forget what the service keeps about it.
    func partitionClosed(_ partition: Int32) async
}

/// Owns the databases of the partitions assigned to this instance (one SQLite file per partition number), each in one
/// `PartitionState`: restores and opens each on assignment and says where each topic resumes (the offsets stored with
/// the state), applies batches and produces the outbox after commits (one flush per partition at a time, retried by the
/// relay while the broker does not answer), pauses a partition whose database fails, and on revocation waits for the
/// work in progress, flushes and closes. Work on a partition (timers, backfills, purges, the notifier's claims and the
/// attempts they hand out) goes through one door, `run(on:)` or `hold`/`release`, which revocation waits for. The
/// orchestrator and the notifier both build on it; what differs goes through `PartitionHooks`.
package actor PartitionOwner: KafkaRebalanceListener {
    package let directory: String
    /// The service, as its dead letters name it.
    package let service: String
    private let migrator: DatabaseMigrator
    private let publisher: any OutboxPublisher
    private let logger: Logger
    /// How long a revocation waits for the partition's work in progress (nil: until it is done).
    private let drainTimeout: Duration?
    /// The most one assignment spends restoring inside the rebalance callback: the consumer does not poll meanwhile,
    /// and past `max.poll.interval.ms` (300 s) the group would drop the member. Partitions still restoring then are
    /// assigned held, and their restores go on outside the callback (`restoreLater`).
    private let restoreBudget: Duration
    private nonisolated let hooksBox = Mutex(WeakHooks())
    private var hooks: (any PartitionHooks)? { hooksBox.withLock { $0.hooks } }

    /// One per assigned partition number.
    private struct Slot {
        var state: PartitionState
        /// The topic-partitions assigned under the number.
        var topics: [TopicPartition]
        /// Open from `opening` to the end of `draining` (nil while restoring, or paused before it could open).
        var database: PartitionDatabase?
    }

    /// Every transition refused (`PartitionState.canMove`): a defect of this type, reported and kept for the tests.
    package private(set) var refusedTransitions: [String] = []
    private static let refusedTransitionsCounter = Counter(label: "herald_partition_transitions_refused_total")

    private var slots: [Int32: Slot] = [:] {
        didSet { running.withLock { $0 = Set(slots.filter { $0.value.state == .running }.keys) } }
    }
    /// The running partitions, readable without the actor: a write transaction checks it as it starts
    /// (`isRunning(_:)`), so that work let in before a revocation does nothing once the revocation has begun.
    private let running = Mutex(Set<Int32>())
    /// Units of work in progress per partition number (`hold`/`release`). Kept across openings: attempts a drain did
    /// not wait for end after the partition went, maybe after it came back.
    private var work: [Int32: Int] = [:]
    private var workWaiters: [Int32: [CheckedContinuation<Void, Never>]] = [:]
    /// Partitions whose outbox still holds records (found on opening, or a produce failed), with when a produce first
    /// left them (`herald_outbox_oldest_seconds`): the relay flushes them.
    private var unflushed: [Int32: ContinuousClock.Instant] = [:]
    /// One flush task per partition at a time, run again while more flushes were asked for.
    private var flushTasks: [Int32: Task<Void, Never>] = [:]
    private var flushRequested: Set<Int32> = []
    /// Every row change also goes to this changelog, and a partition is restored from it before it is processed.
    private let changelog: ChangelogSettings?
    /// Partitions whose restore should stop (revoked while restoring; read by the restore between transactions).
    private nonisolated let restoreStops = RestoreStops()
    /// Restores going on outside the rebalance callback (`restoreLater`), until they end.
    private var laterRestores: [Int32: Task<Void, Never>] = [:]
    /// Lost partitions, until they are assigned here again: their outbox is still produced, but not their changelog
    /// (the new owner writes it now), and what they wrote is not acted on any more (`changelogHolds`).
    private var changelogHeld: Set<Int32> = []
    /// Per open partition: the changelog sequence number produced through, and the callers of `changelogHolds` waiting
    /// for theirs.
    private var changelogThrough: [Int32: Int64] = [:]
    private var changelogWaiters: [Int32: [(end: Int64, waiter: CheckedContinuation<Void, Never>)]] = [:]
    /// The failures of paused partitions, and when each is tried again.
    private var faults = PartitionFaults()
    private nonisolated let flowBox = Mutex(WeakFlow())
    private var flow: (any PartitionFlow)? { flowBox.withLock { $0.flow } }
    private static let pausedGauge = Gauge(label: "herald_partitions_paused")

    package init(
        directory: String, service: String, migrator: DatabaseMigrator, publisher: any OutboxPublisher,
        changelog: ChangelogSettings? = nil, drainTimeout: Duration? = nil, restoreBudget: Duration = .seconds(60),
        logger: Logger
    ) {
        self.restoreBudget = restoreBudget
        self.directory = directory
        self.service = service
        self.migrator = migrator
        self.publisher = publisher
        self.changelog = changelog
        self.drainTimeout = drainTimeout
        self.logger = logger
    }

    /// The service whose hooks run at each opening, draining and closing (held weakly: the service holds the owner).
    package nonisolated func setHooks(_ hooks: any PartitionHooks) { hooksBox.withLock { $0.hooks = hooks } }

    private struct WeakHooks {
        weak var hooks: (any PartitionHooks)?
    }

    /// The consumer whose partitions this owner pauses when their database fails, and resumes (held weakly).
    package nonisolated func setFlow(_ flow: any PartitionFlow) { flowBox.withLock { $0.flow = flow } }

    private struct WeakFlow {
        weak var flow: (any PartitionFlow)?
    }

    // MARK: Lookups

    package func state(of partition: Int32) -> PartitionState? { slots[partition]?.state }

    /// The partition's open database, whatever its state (nil: not open here).
    package func database(_ partition: Int32) -> PartitionDatabase? { slots[partition]?.database }

    /// Moves an assigned partition to `next`, if `PartitionState.canMove` lists the transition.
    private func move(_ number: Int32, to next: PartitionState) {
        guard let current = slots[number]?.state, PartitionState.canMove(from: current, to: next) else {
            refuse(number, from: slots[number]?.state, to: next)
            return
        }
        slots[number]?.state = next
    }

    /// (Re)assigns a partition in `state`, replacing its slot: from not assigned, or from the state it was in.
    private func enter(_ number: Int32, _ state: PartitionState, topics: [TopicPartition], database: PartitionDatabase? = nil) {
        guard PartitionState.canMove(from: slots[number]?.state, to: state) else {
            refuse(number, from: slots[number]?.state, to: state)
            return
        }
        slots[number] = Slot(state: state, topics: topics, database: database)
    }

    private func refuse(_ number: Int32, from state: PartitionState?, to next: PartitionState) {
        let transition = "\(state?.rawValue ?? "unassigned") → \(next.rawValue)"
        refusedTransitions.append("\(number): \(transition)")
        Self.refusedTransitionsCounter.increment()
        logger.error("partition transition refused", metadata: ["partition": "\(number)", "transition": "\(transition)"])
    }

    /// The open databases by partition number, in order (reads).
    package var openDatabases: [(partition: Int32, database: PartitionDatabase)] {
        slots.compactMap { number, slot in slot.database.map { (number, $0) } }.sorted { $0.partition < $1.partition }
    }

    package var openPartitions: [Int32] { openDatabases.map(\.partition) }

    /// Whether the partition is running here, now: callable from inside a database transaction (a synchronous closure),
    /// where the actor cannot be asked. A revocation (drained or lost) makes it false before anything else.
    package nonisolated func isRunning(_ partition: Int32) -> Bool { running.withLock { $0.contains(partition) } }

    /// The running partitions, in order: where `run(on:)` is let in.
    package var runningPartitions: [Int32] { slots.filter { $0.value.state == .running }.keys.sorted() }

    /// Partitions paused because their database fails (retried by `retryPaused`).
    package var pausedPartitions: [Int32] { faults.paused }

    /// Where each topic of a partition resumes: the offset stored with its state, else the beginning.
    private static func starts(
        of topics: [TopicPartition], in database: PartitionDatabase
    ) async throws -> [TopicPartition: KafkaStartOffset] {
        let offsets = try await database.nextOffsets()
        return Dictionary(uniqueKeysWithValues: topics.map { tp in
            (tp, offsets[tp.topic].map(KafkaStartOffset.offset) ?? .beginning)
        })
    }

    // MARK: Work

    /// Runs `body` on the partition's database while the partition is running, as work its revocation waits for; nil
    /// (and `body` not run) when the partition is not running here (not assigned, restoring, paused, draining).
    package func run<T: Sendable>(
        on partition: Int32, _ body: @Sendable (PartitionDatabase) async throws -> T
    ) async rethrows -> T? {
        guard let slot = slots[partition], slot.state == .running, let database = slot.database else { return nil }
        hold(1, on: partition)
        defer { release(1, on: partition) }
        return try await body(database)
    }

    /// Runs `body` on each of `partitions` in turn, as `run(on:)` does; nil (the others not run) as soon as one is not
    /// running here: a question about several partitions is answered for all of them or not at all.
    package func run<T: Sendable>(
        onEach partitions: [Int32], _ body: @Sendable (PartitionDatabase) async throws -> T
    ) async rethrows -> [T]? {
        var results: [T] = []
        for partition in partitions {
            guard let result = try await run(on: partition, body) else { return nil }
            results.append(result)
        }
        return results
    }

    /// Holds `units` of work on the partition that outlive a call (the notifier's attempts between their claim and
    /// their results): its revocation waits until they are released (or the drain timeout).
    package func hold(_ units: Int, on partition: Int32) {
        guard units > 0 else { return }
        work[partition, default: 0] += units
    }

    package func release(_ units: Int, on partition: Int32) {
        guard units > 0, let held = work[partition] else { return }
        guard held > units else {
            work.removeValue(forKey: partition)
            for waiter in workWaiters.removeValue(forKey: partition) ?? [] { waiter.resume() }
            return
        }
        work[partition] = held - units
    }

    /// Units of work in progress on the partition.
    package func workInProgress(on partition: Int32) -> Int { work[partition] ?? 0 }

    /// Waits until the partition's work is over, or `drainTimeout`; returns the units left. The wait is registered in
    /// this actor turn, before the timeout can end it: a timeout that came first once found no waiter to end, and the
    /// revocation waited until the work was over.
    private func drainWork(_ partition: Int32) async -> Int {
        guard work[partition] != nil else { return 0 }
        let timer = drainTimeout.map { timeout in
            Task {
                try? await Task.sleep(for: timeout)
                guard !Task.isCancelled else { return }
                await self.endWaits(partition)
            }
        }
        await withCheckedContinuation { workWaiters[partition, default: []].append($0) }
        timer?.cancel()
        return workInProgress(on: partition)
    }

    /// The drain's timeout: its wait for the work ends.
    private func endWaits(_ partition: Int32) {
        for waiter in workWaiters.removeValue(forKey: partition) ?? [] { waiter.resume() }
    }

    // MARK: KafkaRebalanceListener

    package func partitionsAssigned(_ partitions: [TopicPartition]) async throws -> [TopicPartition: KafkaStartOffset] {
        var starts: [TopicPartition: KafkaStartOffset] = [:]
        let deadline = ContinuousClock.now + restoreBudget
        for number in Set(partitions.map(\.partition)).sorted() {
            let assigned = partitions.filter { $0.partition == number }
            do {
                let database = try await openPartition(number, assigned: assigned, restoreUntil: deadline)
                starts.merge(try await Self.starts(of: assigned, in: database)) { $1 }
            } catch is RestoreDeferred {
                for tp in assigned { starts[tp] = .held }
                restoreLater(number)
            } catch let error as RestoreInterrupted {
                logger.info("partition restore interrupted", metadata: ["partition": "\(error.partition)"])
            } catch {
                // Its database cannot be opened (corrupt, a migration fails, the disk): assigned but not read, and
                // tried again later; the instance's other partitions go on.
                enter(number, .paused, topics: assigned, database: slots[number]?.database)
                paused(number, error: error)
                for tp in assigned { starts[tp] = .held }
            }
        }
        logger.info(
            "partition databases open", metadata: ["partitions": .string(openPartitions.map(String.init).joined(separator: ","))])
        return starts
    }

    /// The partition's database, restored, opened and handed to the service's hooks, then running (unless it was
    /// open already). A restore still running at `restoreUntil` stops there (what it applied saved) and throws
    /// `RestoreDeferred`: the partition stays `restoring`.
    private func openPartition(
        _ number: Int32, assigned: [TopicPartition], restoreUntil deadline: ContinuousClock.Instant? = nil
    ) async throws -> PartitionDatabase {
        if let open = slots[number]?.database {
            slots[number]?.topics = assigned
            return open
        }
        // A restore of this number still ending outside the callback (revoked, then assigned again): the database is
        // one file, restored by one at a time.
        if deadline != nil, let earlier = laterRestores[number] { await earlier.value }
        changelogHeld.remove(number)
        // A database restored anew numbers its changelog from the start again.
        changelogThrough.removeValue(forKey: number)
        enter(number, changelog == nil ? .opening : .restoring, topics: assigned)
        let database: PartitionDatabase
        do {
            database = try await openCaughtUp(number, until: deadline)
        } catch {
            if error is RestoreInterrupted {
                // Still assigned (a revocation removes the slot): it was the budget that ended it.
                if let deadline, slots[number]?.state == .restoring, ContinuousClock.now >= deadline {
                    throw RestoreDeferred(partition: number)
                }
                slots.removeValue(forKey: number)
            }
            throw error
        }
        guard slots[number] != nil else {
            // Revoked while restoring (the restore was not told in time): closed at once.
            try? database.close()
            throw RestoreInterrupted(partition: number)
        }
        move(number, to: .opening)
        slots[number]?.database = database
        do {
            try await hooks?.partitionOpened(database, assigned: assigned)
        } catch {
            slots[number]?.database = nil
            try? database.close()
            throw error
        }
        move(number, to: .running)
        // Output committed before a crash or a revocation but not produced yet: flushed in the background, not here,
        // where a broker outage would hold the whole group's rebalance.
        if try await database.hasUnproduced() {
            markUnflushed(number)
            scheduleFlush(number)
        }
        return database
    }

    /// Opens a partition's database; with a changelog, level with it first (`PartitionCatchUp`), stopping at
    /// `deadline` if it comes first.
    private func openCaughtUp(_ number: Int32, until deadline: ContinuousClock.Instant?) async throws -> PartitionDatabase {
        guard let changelog else {
            return try PartitionDatabase.open(directory: directory, partition: number, migrator: migrator)
        }
        restoreStops.set.withLock { _ = $0.remove(number) }
        defer { restoreStops.set.withLock { _ = $0.remove(number) } }
        let stops = restoreStops
        let catchUp = PartitionCatchUp(directory: directory, migrator: migrator, changelog: changelog, logger: logger)
        return try await catchUp.open(number) {
            stops.set.withLock { $0.contains(number) } || deadline.map { ContinuousClock.now >= $0 } == true
        }
    }

    /// A restore the rebalance callback had no time for goes on here, outside it, while the consumer polls the
    /// member's other partitions; once open, the partition is resumed from its stored offsets between two batches. A
    /// revocation meanwhile stops it as it stops any restore; a database that fails is paused and retried.
    private func restoreLater(_ number: Int32) {
        logger.info("partition restore goes on outside the rebalance", metadata: ["partition": "\(number)"])
        laterRestores[number] = Task {
            await self.finishRestore(number)
            await self.restoreEnded(number)
        }
    }

    private func restoreEnded(_ number: Int32) { laterRestores[number] = nil }

    private func finishRestore(_ number: Int32) async {
        guard let slot = slots[number], slot.state == .restoring else { return }
        let topics = slot.topics
        do {
            let database = try await openPartition(number, assigned: topics)
            let starts = try await Self.starts(of: topics, in: database)
            flow?.betweenBatches { await self.resumeRestored(number, topics: topics, at: starts) }
        } catch is RestoreInterrupted {
            logger.info("partition restore interrupted", metadata: ["partition": "\(number)"])
        } catch {
            enter(number, .paused, topics: topics, database: slots[number]?.database)
            paused(number, error: error)
        }
    }

    private func resumeRestored(_ number: Int32, topics: [TopicPartition], at starts: [TopicPartition: KafkaStartOffset]) async {
        guard slots[number]?.state == .running, slots[number]?.topics == topics else { return }
        do {
            try await flow?.resume(topics, at: starts)
            logger.info("partition restored outside the rebalance, resumed", metadata: ["partition": "\(number)"])
        } catch {
            await pause(number, error: error)
        }
    }

    package func partitionsRevoked(_ partitions: [TopicPartition], lost: Bool) async {
        for number in Set(partitions.map(\.partition)).sorted() {
            guard let slot = slots[number] else { continue }
            if faults.isPaused(number) {
                faults.forget(number)
                Self.pausedGauge.record(faults.paused.count)
            }
            if slot.state == .restoring {
                // Revoked while its restore runs: the restore stops after its current transaction, and what it applied
                // stays for the next restore of this database to go on from.
                restoreStops.set.withLock { _ = $0.insert(number) }
                slots.removeValue(forKey: number)
                continue
            }
            guard slot.database != nil else {
                slots.removeValue(forKey: number)
                continue
            }
            move(number, to: .draining)
            if lost { changelogHeld.insert(number) }
            // A lost partition belongs to another member already: nothing of it is drained. Its outbox is still
            // produced (best effort): outputs carry deterministic ids, so the new owner's consumers dedupe them.
            if !lost { await drain(number) }
            let flushed = await flush(number)
            flushRequested.remove(number)
            if let task = flushTasks[number] { await task.value }
            guard let database = slots.removeValue(forKey: number)?.database else { continue }
            unflushed[number] = nil
            Self.outboxAge(number).record(0)
            if !flushed {
                logger.warning(
                    "partition released with output not produced; produced when a database with it owns the partition again",
                    metadata: ["partition": "\(number)"])
            }
            do { try database.close() } catch {
                logger.warning("closing partition database failed", metadata: ["partition": "\(number)", "error": "\(error)"])
            }
            await hooks?.partitionClosed(number)
        }
    }

    /// Waits for the partition's work in progress, lets the service record what it left, and says how it went.
    private func drain(_ number: Int32) async {
        let started = ContinuousClock.now
        let waiting = workInProgress(on: number)
        // A drain waits for answers (a provider's, up to its deadline): said when it starts, not only when it ends.
        if waiting > 0 { logger.info("partition draining", metadata: ["partition": "\(number)", "work": "\(waiting)"]) }
        let left = await drainWork(number)
        await hooks?.partitionDrained(number, workLeft: left)
        guard waiting > 0 else { return }
        let metadata: Logger.Metadata = [
            "partition": "\(number)", "work": "\(waiting)", "left": "\(left)",
            "ms": "\((ContinuousClock.now - started).milliseconds)",
        ]
        if left > 0 {
            logger.warning("partition released with work still in progress; its results are reported when they come", metadata: metadata)
        } else {
            logger.info("partition drained", metadata: metadata)
        }
    }

    // MARK: Batches and failures

    /// Applies one partition's records of a batch (`PartitionDatabase.applyBatch(_:apply:deadLetter:)`: a record the
    /// code rejects becomes a dead letter of this service) and asks for its outbox to be produced; returns the outbox
    /// records, or nil when nothing was applied: the partition is not running here (its records are read again from
    /// its stored offsets by whoever runs it), or its database failed now (it is paused).
    package func apply(
        _ partition: TopicPartition, _ records: [KafkaRecord],
        apply: @escaping @Sendable (Database, KafkaRecord) throws -> [PendingOutput]
    ) async -> [OutboxRecord]? {
        let number = partition.partition
        guard let slot = slots[number], slot.state == .running || slot.state == .draining, let database = slot.database else {
            // Not ours (any more), or paused: the records are not consumed here.
            if slots[number] == nil { logger.warning("batch for a partition not open", metadata: ["partition": "\(partition)"]) }
            return nil
        }
        let service = self.service
        do {
            let applied = try await database.applyBatch(records, apply: apply) { record, reason in
                .deadLetter(record, service: service, reason: "not applied: \(reason)")
            }
            faults.applied(number)
            for letter in applied.deadLettered {
                logger.error(
                    "record not applied; sent to the dead letters",
                    metadata: ["partition": "\(letter.partition)", "offset": "\(letter.offset)", "reason": .string(letter.reason)])
            }
            if !applied.outbox.isEmpty { scheduleFlush(number) }
            return applied.outbox
        } catch {
            await pause(number, error: error)
            return nil
        }
    }

    /// Pauses a partition whose database failed (the service's other writes to it, like the notifier's results,
    /// report here too): its records are no longer read, and it is tried again after a growing delay.
    package func pause(_ number: Int32, error: any Error) async {
        let newly = paused(number, error: error)
        if slots[number]?.state == .running { move(number, to: .paused) }
        guard newly, let topics = slots[number]?.topics else { return }
        do {
            try await flow?.pause(topics)
        } catch {
            logger.error("pausing a failed partition failed", metadata: ["partition": "\(number)", "error": "\(error)"])
        }
    }

    /// Records the failure and reports it; returns whether the partition was running until now.
    @discardableResult
    private func paused(_ number: Int32, error: any Error) -> Bool {
        let (fault, newly) = faults.failed(number, error: error)
        Self.pausedGauge.record(faults.paused.count)
        let retry = PartitionFaults.delay(afterFailures: fault.failures)
        logger.error(
            newly ? "partition paused: its database fails; the instance's other partitions go on" : "partition still failing",
            metadata: [
                "partition": "\(number)", "error": .string(fault.error), "failures": "\(fault.failures)",
                "retry_in_seconds": "\(retry.components.seconds)",
            ])
        return newly
    }

    /// The relay's round: every paused partition whose delay is over is tried again, between two batches of the
    /// consumer: opened if it is not, then resumed from the offsets stored with its state.
    package func retryPaused() {
        guard let flow else { return }
        for number in faults.due() {
            flow.betweenBatches { await self.resume(number) }
        }
    }

    private func resume(_ number: Int32) async {
        guard faults.isPaused(number), let topics = slots[number]?.topics else { return }
        do {
            let database = try await openPartition(number, assigned: topics)
            let starts = try await Self.starts(of: topics, in: database)
            faults.resumed(number)
            Self.pausedGauge.record(faults.paused.count)
            move(number, to: .running)
            try await flow?.resume(topics, at: starts)
            logger.notice("partition resumed", metadata: ["partition": "\(number)"])
        } catch {
            await pause(number, error: error)
        }
    }

    // MARK: Outbox

    /// Asks for a partition's outbox to be produced, without waiting for it.
    package func scheduleFlush(_ number: Int32) {
        guard slots[number]?.database != nil else { return }
        flushRequested.insert(number)
        guard flushTasks[number] == nil else { return }
        flushTasks[number] = Task { await self.drainFlushes(number) }
    }

    /// Produces a partition's outbox now (after the flush in progress, if any); returns whether it is empty.
    @discardableResult
    package func flush(_ number: Int32) async -> Bool {
        scheduleFlush(number)
        if let task = flushTasks[number] { await task.value }
        return slots[number]?.database != nil && unflushed[number] == nil
    }

    /// The relay's round: every partition whose outbox a produce left behind, and, for each open partition, how long
    /// its oldest output has waited (`herald_outbox_oldest_seconds{partition}`, 0 when nothing waits): an output that
    /// cannot go out shows there, however its partition's other outputs fare.
    package func flushUnflushed() {
        for number in unflushed.keys.sorted() { scheduleFlush(number) }
        let now = ContinuousClock.now
        for number in slots.keys {
            let waited = unflushed[number].map { now - $0 } ?? .zero
            Self.outboxAge(number).record(waited.timeInterval)
        }
    }

    /// Seconds the partition's oldest unproduced output (outbox or changelog) has waited since a produce first left it.
    static func outboxAge(_ partition: Int32) -> Gauge {
        Gauge(label: "herald_outbox_oldest_seconds", dimensions: [("partition", "\(partition)")])
    }

    private func markUnflushed(_ number: Int32) {
        if unflushed[number] == nil { unflushed[number] = ContinuousClock.now }
    }

    private func drainFlushes(_ number: Int32) async {
        while flushRequested.remove(number) != nil, let database = slots[number]?.database {
            do {
                let (service, logger) = (self.service, self.logger)
                try await database.produceOutbox(
                    with: publisher, changelog: !changelogHeld.contains(number),
                    unproducible: { record, error in record.unproducibleStub(service: service, error: error, logger: logger) },
                    produced: { end in await self.changelogProduced(number, through: end) })
                unflushed[number] = nil
            } catch {
                markUnflushed(number)
                logger.warning(
                    "outbox not produced yet; retried by the relay", metadata: ["partition": "\(number)", "error": "\(error)"])
                flushRequested.remove(number)
            }
        }
        flushTasks[number] = nil
        // Produced, failed, or lost: those still waiting learn which from `changelogHolds`.
        resumeChangelogWaiters(number) { _ in true }
    }

    private func changelogProduced(_ number: Int32, through end: Int64) {
        changelogThrough[number] = max(changelogThrough[number] ?? 0, end)
        resumeChangelogWaiters(number) { $0 <= end }
    }

    private func resumeChangelogWaiters(_ number: Int32, where ready: (Int64) -> Bool) {
        guard let waiting = changelogWaiters.removeValue(forKey: number) else { return }
        let staying = waiting.filter { !ready($0.end) }
        if !staying.isEmpty { changelogWaiters[number] = staying }
        for waiting in waiting where ready(waiting.end) { waiting.waiter.resume() }
    }

    /// Whether what the partition's transactions wrote up to the changelog's sequence number `end` (a transaction's
    /// `changelogEnd`) may be acted on outside the process (the notifier's provider call for an attempt it claimed):
    /// the changelog is produced through it first, so that a next owner restores those changes and does not do again
    /// what they began. The wait ends with the flush round that produces `end`, not when the changelog is empty (under
    /// a steady load, it never is).
    ///
    /// False when the partition was lost, before or during the wait: its changelog is no longer this member's to write,
    /// and the next owner may have restored it without those changes. True otherwise, also when the produce failed
    /// while the partition stays here (the broker did not answer within the producer's delivery timeout; the relay
    /// produces it later): a broker outage slows the work down to that timeout, only a loss stops it.
    package func changelogHolds(_ number: Int32, through end: Int64) async -> Bool {
        guard changelog != nil, !changelogHeld.contains(number) else { return changelog == nil }
        if (changelogThrough[number] ?? 0) < end {
            scheduleFlush(number)
            if flushTasks[number] != nil {
                await withCheckedContinuation { changelogWaiters[number, default: []].append((end, $0)) }
            }
        }
        return !changelogHeld.contains(number)
    }

    /// Publishes records that belong to no open partition any more (an outcome that arrived after its partition
    /// went), straight to the broker.
    package func publishDirectly(_ records: [KafkaOutgoingRecord]) async throws {
        _ = try await publisher.publish(records)
    }
}

/// The partitions whose restore should stop (read by the restore between its transactions).
private final class RestoreStops: Sendable {
    let set = Mutex(Set<Int32>())
}

/// A restore stopped by the rebalance callback's budget, the partition still assigned: it goes on outside the callback.
struct RestoreDeferred: Error {
    var partition: Int32
}
