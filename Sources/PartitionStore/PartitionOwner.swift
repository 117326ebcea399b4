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

    /// Every transition refused (`PartitionState.canMove`): a defect of this type, reported and kept for the tests.
    package private(set) var refusedTransitions: [String] = []
    private static let refusedTransitionsCounter = Counter(label: "herald_partition_transitions_refused_total")

    /// Every partition number assigned here since the start, each with all the owner knows of it (its state, database,
    /// work, outbox, changelog position and failure): made at its first assignment, kept after it goes.
    private var tasks: [Int32: PartitionTask] = [:]
    /// The running partitions, readable without the actor: a write transaction checks it as it starts
    /// (`isRunning(_:)`), so that work let in before a revocation does nothing once the revocation has begun. Set at
    /// every change of a task's state (`stateChanged`).
    private let running = Mutex(Set<Int32>())
    /// Every row change also goes to this changelog, and a partition is restored from it before it is processed.
    private let changelog: ChangelogSettings?
    /// Partitions whose restore should stop (revoked while restoring; read by the restore between transactions).
    private nonisolated let restoreStops = RestoreStops()
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

    package func state(of partition: Int32) -> PartitionState? { tasks[partition]?.state }

    /// The partition's open database, whatever its state (nil: not open here).
    package func database(_ partition: Int32) -> PartitionDatabase? { tasks[partition]?.database }

    /// The number's task, made at its first assignment.
    private func task(_ number: Int32) -> PartitionTask {
        if let known = tasks[number] { return known }
        let made = PartitionTask(number: number)
        tasks[number] = made
        return made
    }

    /// The number's task while it is assigned here.
    private func assigned(_ number: Int32) -> PartitionTask? {
        guard let task = tasks[number], task.state != nil else { return nil }
        return task
    }

    /// Moves an assigned partition to `next`, if `PartitionState.canMove` lists the transition.
    private func move(_ number: Int32, to next: PartitionState) {
        let task = task(number)
        let from = task.state
        guard task.move(to: next) else { return refuse(number, from: from, to: next) }
        stateChanged()
    }

    /// (Re)assigns a partition in `state`: from not assigned, or from the state it was in.
    private func enter(_ number: Int32, _ state: PartitionState, topics: [TopicPartition], database: PartitionDatabase? = nil) {
        let task = task(number)
        let from = task.state
        guard task.enter(state, topics: topics, database: database) else { return refuse(number, from: from, to: state) }
        stateChanged()
    }

    /// The partition is no longer assigned here; returns its database, still open.
    @discardableResult
    private func leave(_ number: Int32) -> PartitionDatabase? {
        guard let task = tasks[number] else { return nil }
        defer { stateChanged() }
        return task.leave()
    }

    private func stateChanged() {
        let now = Set(tasks.values.filter { $0.state == .running }.map(\.number))
        running.withLock { $0 = now }
    }

    private func refuse(_ number: Int32, from state: PartitionState?, to next: PartitionState) {
        let transition = "\(state?.rawValue ?? "unassigned") → \(next.rawValue)"
        refusedTransitions.append("\(number): \(transition)")
        Self.refusedTransitionsCounter.increment()
        logger.error("partition transition refused", metadata: ["partition": "\(number)", "transition": "\(transition)"])
    }

    /// The open databases by partition number, in order (reads).
    package var openDatabases: [(partition: Int32, database: PartitionDatabase)] {
        tasks.values.compactMap { task in task.database.map { (task.number, $0) } }.sorted { $0.partition < $1.partition }
    }

    package var openPartitions: [Int32] { openDatabases.map(\.partition) }

    /// Whether the partition is running here, now: callable from inside a database transaction (a synchronous closure),
    /// where the actor cannot be asked. A revocation (drained or lost) makes it false before anything else.
    package nonisolated func isRunning(_ partition: Int32) -> Bool { running.withLock { $0.contains(partition) } }

    /// The running partitions, in order: where `run(on:)` is let in.
    package var runningPartitions: [Int32] { tasks.values.filter { $0.state == .running }.map(\.number).sorted() }

    /// Partitions paused because their database fails (retried by `retryPaused`).
    package var pausedPartitions: [Int32] { tasks.values.filter(\.isPaused).map(\.number).sorted() }

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
        guard let task = tasks[partition], task.state == .running, let database = task.database else { return nil }
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
        task(partition).hold(units)
    }

    package func release(_ units: Int, on partition: Int32) {
        guard units > 0 else { return }
        tasks[partition]?.release(units)
    }

    /// Units of work in progress on the partition.
    package func workInProgress(on partition: Int32) -> Int { tasks[partition]?.work ?? 0 }

    /// Waits until the partition's work is over, or `drainTimeout`; returns the units left. The wait is registered in
    /// this actor turn, before the timeout can end it: a timeout that came first once found no waiter to end, and the
    /// revocation waited until the work was over.
    private func drainWork(_ partition: Int32) async -> Int {
        guard let task = tasks[partition], task.work > 0 else { return 0 }
        let timer = drainTimeout.map { timeout in
            Task {
                try? await Task.sleep(for: timeout)
                guard !Task.isCancelled else { return }
                await self.endWaits(partition)
            }
        }
        await withCheckedContinuation { task.waitForWork($0) }
        timer?.cancel()
        return task.work
    }

    /// The drain's timeout: its wait for the work ends.
    private func endWaits(_ partition: Int32) { tasks[partition]?.endWorkWaits() }

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
                enter(number, .paused, topics: assigned, database: tasks[number]?.database)
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
        let task = task(number)
        if let open = task.database {
            task.reassigned(assigned)
            return open
        }
        // A restore of this number still ending outside the callback (revoked, then assigned again): the database is
        // one file, restored by one at a time.
        if deadline != nil, let earlier = task.laterRestore { await earlier.value }
        task.changelogHeld = false
        task.changelogRestarts()
        enter(number, changelog == nil ? .opening : .restoring, topics: assigned)
        let database: PartitionDatabase
        do {
            database = try await openCaughtUp(number, until: deadline)
        } catch {
            if error is RestoreInterrupted {
                // Still assigned (a revocation removes the slot): it was the budget that ended it.
                if let deadline, task.state == .restoring, ContinuousClock.now >= deadline {
                    throw RestoreDeferred(partition: number)
                }
                leave(number)
            }
            throw error
        }
        guard task.state != nil else {
            // Revoked while restoring (the restore was not told in time): closed at once.
            try? database.close()
            throw RestoreInterrupted(partition: number)
        }
        move(number, to: .opening)
        task.database = database
        do {
            try await hooks?.partitionOpened(database, assigned: assigned)
        } catch {
            task.database = nil
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
        task(number).laterRestore = Task {
            await self.finishRestore(number)
            await self.restoreEnded(number)
        }
    }

    private func restoreEnded(_ number: Int32) { tasks[number]?.laterRestore = nil }

    private func finishRestore(_ number: Int32) async {
        guard let task = tasks[number], task.state == .restoring else { return }
        let topics = task.topics
        do {
            let database = try await openPartition(number, assigned: topics)
            let starts = try await Self.starts(of: topics, in: database)
            flow?.betweenBatches { await self.resumeRestored(number, topics: topics, at: starts) }
        } catch is RestoreInterrupted {
            logger.info("partition restore interrupted", metadata: ["partition": "\(number)"])
        } catch {
            enter(number, .paused, topics: topics, database: task.database)
            paused(number, error: error)
        }
    }

    private func resumeRestored(_ number: Int32, topics: [TopicPartition], at starts: [TopicPartition: KafkaStartOffset]) async {
        guard let task = tasks[number], task.state == .running, task.topics == topics else { return }
        do {
            try await flow?.resume(topics, at: starts)
            logger.info("partition restored outside the rebalance, resumed", metadata: ["partition": "\(number)"])
        } catch {
            await pause(number, error: error)
        }
    }

    package func partitionsRevoked(_ partitions: [TopicPartition], lost: Bool) async {
        for number in Set(partitions.map(\.partition)).sorted() {
            guard let task = assigned(number) else { continue }
            if task.isPaused {
                task.forgetFault()
                Self.pausedGauge.record(pausedPartitions.count)
            }
            if task.state == .restoring {
                // Revoked while its restore runs: the restore stops after its current transaction, and what it applied
                // stays for the next restore of this database to go on from.
                restoreStops.set.withLock { _ = $0.insert(number) }
                leave(number)
                continue
            }
            guard task.database != nil else {
                leave(number)
                continue
            }
            move(number, to: .draining)
            if lost { task.changelogHeld = true }
            // A lost partition belongs to another member already: nothing of it is drained. Its outbox is still
            // produced (best effort): outputs carry deterministic ids, so the new owner's consumers dedupe them.
            if !lost { await drain(number) }
            let flushed = await flush(number)
            task.flushRequested = false
            if let flushing = task.flushTask { await flushing.value }
            guard let database = leave(number) else { continue }
            // What was produced is deleted before the database closes: opened here again, it does not produce it twice.
            do { try await database.forgetProduced() } catch {
                logger.warning("produced outbox not deleted before closing", metadata: ["partition": "\(number)", "error": "\(error)"])
            }
            task.unflushedSince = nil
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

    /// Applies one partition's records of a batch (`PartitionDatabase.applyBatch(_:apply:deadLetter:finish:)`: a record
    /// the code rejects becomes a dead letter of this service) and asks for its outbox to be produced; returns the outbox
    /// records, or nil when nothing was applied: the partition is not running here (its records are read again from
    /// its stored offsets by whoever runs it), or its database failed now (it is paused).
    package func apply(
        _ partition: TopicPartition, _ records: [KafkaRecord],
        apply: @escaping @Sendable (Database, KafkaRecord) throws -> [PendingOutput]
    ) async -> [OutboxRecord]? {
        await self.apply(partition, records, apply: apply, finish: nil as PartitionDatabase.BatchFinish<Void>?)?.outbox
    }

    /// `apply(_:_:apply:)` with `finish` run last in the batch's transaction (`PartitionDatabase.applyBatch`); returns
    /// what the batch left, `finish`'s result among it (nil when the records were applied one by one).
    package func apply<T: Sendable>(
        _ partition: TopicPartition, _ records: [KafkaRecord],
        apply: @escaping @Sendable (Database, KafkaRecord) throws -> [PendingOutput],
        finish: PartitionDatabase.BatchFinish<T>?
    ) async -> PartitionDatabase.AppliedBatch<T>? {
        let number = partition.partition
        guard let task = tasks[number], task.state == .running || task.state == .draining, let database = task.database else {
            // Not ours (any more), or paused: the records are not consumed here.
            if tasks[number]?.state == nil { logger.warning("batch for a partition not open", metadata: ["partition": "\(partition)"]) }
            return nil
        }
        let service = self.service
        do {
            let applied = try await database.applyBatch(records, apply: apply, deadLetter: { record, reason in
                .deadLetter(record, service: service, reason: "not applied: \(reason)")
            }, finish: finish)
            task.applied()
            for letter in applied.deadLettered {
                logger.error(
                    "record not applied; sent to the dead letters",
                    metadata: ["partition": "\(letter.partition)", "offset": "\(letter.offset)", "reason": .string(letter.reason)])
            }
            if !applied.outbox.isEmpty { scheduleFlush(number) }
            return applied
        } catch {
            await pause(number, error: error)
            return nil
        }
    }

    /// Pauses a partition whose database failed (the service's other writes to it, like the notifier's results,
    /// report here too): its records are no longer read, and it is tried again after a growing delay.
    package func pause(_ number: Int32, error: any Error) async {
        let newly = paused(number, error: error)
        if tasks[number]?.state == .running { move(number, to: .paused) }
        guard newly, let topics = assigned(number)?.topics else { return }
        do {
            try await flow?.pause(topics)
        } catch {
            logger.error("pausing a failed partition failed", metadata: ["partition": "\(number)", "error": "\(error)"])
        }
    }

    /// Records the failure and reports it; returns whether the partition was running until now.
    @discardableResult
    private func paused(_ number: Int32, error: any Error) -> Bool {
        let (fault, newly) = task(number).failed(error)
        Self.pausedGauge.record(pausedPartitions.count)
        let retry = PartitionFault.delay(afterFailures: fault.failures)
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
        for task in tasks.values.sorted(by: { $0.number < $1.number }) where task.takeRetry() {
            let number = task.number
            flow.betweenBatches { await self.resume(number) }
        }
    }

    private func resume(_ number: Int32) async {
        guard let task = assigned(number), task.isPaused else { return }
        let topics = task.topics
        do {
            let database = try await openPartition(number, assigned: topics)
            let starts = try await Self.starts(of: topics, in: database)
            task.resumed()
            Self.pausedGauge.record(pausedPartitions.count)
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
        guard let task = tasks[number], task.database != nil else { return }
        task.flushRequested = true
        guard task.flushTask == nil else { return }
        task.flushTask = Task { await self.drainFlushes(number) }
    }

    /// Produces a partition's outbox now (after the flush in progress, if any); returns whether it is empty.
    @discardableResult
    package func flush(_ number: Int32) async -> Bool {
        scheduleFlush(number)
        if let flushing = tasks[number]?.flushTask { await flushing.value }
        return tasks[number]?.database != nil && tasks[number]?.unflushedSince == nil
    }

    /// The relay's round: every partition whose outbox a produce left behind, and, for each open partition, how long
    /// its oldest output has waited (`herald_outbox_oldest_seconds{partition}`, 0 when nothing waits): an output that
    /// cannot go out shows there, however its partition's other outputs fare.
    package func flushUnflushed() async {
        let known = tasks.values.sorted { $0.number < $1.number }
        for task in known where task.unflushedSince != nil { scheduleFlush(task.number) }
        // What was produced is deleted by the partition's next write; a partition with no write for a second has it
        // deleted here (`ProducedMarks`).
        for task in known where task.state == .running {
            do { try await task.database?.forgetProduced(after: .seconds(1)) } catch {
                logger.warning("produced outbox not deleted", metadata: ["partition": "\(task.number)", "error": "\(error)"])
            }
        }
        let now = ContinuousClock.now
        for task in known where task.state != nil {
            let waited = task.unflushedSince.map { now - $0 } ?? .zero
            Self.outboxAge(task.number).record(waited.timeInterval)
        }
    }

    /// Seconds the partition's oldest unproduced output (outbox or changelog) has waited since a produce first left it.
    static func outboxAge(_ partition: Int32) -> Gauge {
        Gauge(label: "herald_outbox_oldest_seconds", dimensions: [("partition", "\(partition)")])
    }

    private func markUnflushed(_ number: Int32) {
        let task = task(number)
        if task.unflushedSince == nil { task.unflushedSince = ContinuousClock.now }
    }

    private func drainFlushes(_ number: Int32) async {
        guard let task = tasks[number] else { return }
        while task.flushRequested {
            task.flushRequested = false
            guard let database = task.database else { break }
            do {
                let (service, logger) = (self.service, self.logger)
                try await database.produceOutbox(
                    with: publisher, changelog: !task.changelogHeld,
                    unproducible: { record, error in record.unproducibleStub(service: service, error: error, logger: logger) },
                    produced: { end in await self.changelogProduced(number, through: end) })
                task.unflushedSince = nil
            } catch {
                markUnflushed(number)
                logger.warning(
                    "outbox not produced yet; retried by the relay", metadata: ["partition": "\(number)", "error": "\(error)"])
                task.flushRequested = false
            }
        }
        task.flushTask = nil
        // Produced, failed, or lost: those still waiting learn which from `changelogHolds`.
        task.endChangelogWaits()
    }

    private func changelogProduced(_ number: Int32, through end: Int64) {
        tasks[number]?.changelogProduced(through: end)
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
        guard changelog != nil else { return true }
        guard let task = tasks[number] else { return true }
        guard !task.changelogHeld else { return false }
        if task.changelogThrough < end {
            scheduleFlush(number)
            if task.flushTask != nil { await withCheckedContinuation { task.waitForChangelog(through: end, $0) } }
        }
        return !task.changelogHeld
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
