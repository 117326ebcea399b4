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
    /// The partition is being taken away: finish its work in flight and record it. Its database is still open; the
    /// owner flushes the outbox after this returns. Not called for a lost partition (another member owns it already).
    func partitionDraining(_ partition: Int32) async
    /// The partition's database was closed: forget what the service keeps about it.
    func partitionClosed(_ partition: Int32) async
}

/// Owns the databases of the partitions assigned to this instance (one SQLite file per partition number): opens and
/// migrates each on assignment and says where each topic resumes (the offsets stored with the state), produces the
/// outbox after commits (one flush per partition at a time, retried by the relay while the broker does not answer),
/// and on revocation lets the service drain the partition, flushes it and closes it. The orchestrator and the notifier
/// both build on it; what differs goes through `PartitionHooks`.
package actor PartitionOwner: KafkaRebalanceListener {
    package let directory: String
    private let migrator: DatabaseMigrator
    private let publisher: any OutboxPublisher
    private let logger: Logger
    private nonisolated let hooksBox = Mutex(WeakHooks())
    private var hooks: (any PartitionHooks)? { hooksBox.withLock { $0.hooks } }
    private var databases: [Int32: PartitionDatabase] = [:]
    /// Partitions whose outbox still holds records (found on opening, or a produce failed): the relay flushes them.
    private var unflushed: Set<Int32> = []
    /// One flush task per partition at a time, run again while more flushes were asked for.
    private var flushTasks: [Int32: Task<Void, Never>] = [:]
    private var flushRequested: Set<Int32> = []
    /// Every row change also goes to this changelog, and a partition is restored from it before it is processed.
    private let changelog: ChangelogSettings?
    /// Partitions being restored, and those of them revoked meanwhile (their restore stops between transactions).
    private var restoring: Set<Int32> = []
    private nonisolated let restoreStops = RestoreStops()
    /// Lost partitions: their outbox is still produced, but not their changelog (the new owner writes it now).
    private var changelogHeld: Set<Int32> = []
    /// The topic-partitions assigned under each partition number.
    private var assigned: [Int32: [TopicPartition]] = [:]
    /// Partitions paused because their database failed, and the consumer that pauses and resumes them.
    private var faults = PartitionFaults()
    private nonisolated let flowBox = Mutex(WeakFlow())
    private var flow: (any PartitionFlow)? { flowBox.withLock { $0.flow } }
    private static let pausedGauge = Gauge(label: "herald_partitions_paused")

    package init(
        directory: String, migrator: DatabaseMigrator, publisher: any OutboxPublisher, changelog: ChangelogSettings? = nil,
        logger: Logger
    ) {
        self.directory = directory
        self.migrator = migrator
        self.publisher = publisher
        self.changelog = changelog
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

    package func database(_ partition: Int32) -> PartitionDatabase? { databases[partition] }

    /// The open databases by partition number, in order.
    package var openDatabases: [(partition: Int32, database: PartitionDatabase)] {
        databases.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }
    }

    package var openPartitions: [Int32] { databases.keys.sorted() }

    /// Partitions paused because their database fails (retried by `retryPaused`).
    package var pausedPartitions: [Int32] { faults.paused }

    /// The open databases that are not paused, in order: where timers, claims and purges run (a paused partition's
    /// database fails; its work waits for it to resume).
    package var activeDatabases: [(partition: Int32, database: PartitionDatabase)] {
        openDatabases.filter { !faults.isPaused($0.partition) }
    }

    /// The partition's database, if it is open and not paused.
    package func activeDatabase(_ partition: Int32) -> PartitionDatabase? {
        faults.isPaused(partition) ? nil : databases[partition]
    }

    /// Where each topic of a partition resumes: the offset stored with its state, else the beginning.
    private static func starts(
        of topics: [TopicPartition], in database: PartitionDatabase
    ) async throws -> [TopicPartition: KafkaStartOffset] {
        let offsets = try await database.nextOffsets()
        return Dictionary(uniqueKeysWithValues: topics.map { tp in
            (tp, offsets[tp.topic].map(KafkaStartOffset.offset) ?? .beginning)
        })
    }

    // MARK: KafkaRebalanceListener

    package func partitionsAssigned(_ partitions: [TopicPartition]) async throws -> [TopicPartition: KafkaStartOffset] {
        var starts: [TopicPartition: KafkaStartOffset] = [:]
        for number in Set(partitions.map(\.partition)).sorted() {
            let assigned = partitions.filter { $0.partition == number }
            self.assigned[number] = assigned
            do {
                let database = try await openPartition(number, assigned: assigned)
                starts.merge(try await Self.starts(of: assigned, in: database)) { $1 }
            } catch let error as RestoreInterrupted {
                logger.info("partition restore interrupted", metadata: ["partition": "\(error.partition)"])
            } catch {
                // Its database cannot be opened (corrupt, a migration fails, the disk): assigned but not read, and
                // tried again later; the instance's other partitions go on.
                paused(number, error: error)
                for tp in assigned { starts[tp] = .held }
            }
        }
        logger.info(
            "partition databases open", metadata: ["partitions": .string(openPartitions.map(String.init).joined(separator: ","))])
        return starts
    }

    /// The partition's database, opened (and caught up, and handed to the service's hooks) unless it is open.
    private func openPartition(_ number: Int32, assigned: [TopicPartition]) async throws -> PartitionDatabase {
        if let open = databases[number] { return open }
        let database = try await openCaughtUp(number)
        databases[number] = database
        do {
            try await hooks?.partitionOpened(database, assigned: assigned)
        } catch {
            databases.removeValue(forKey: number)
            try? database.close()
            throw error
        }
        // Output committed before a crash or a revocation but not produced yet: flushed in the background, not here,
        // where a broker outage would hold the whole group's rebalance.
        if try await database.hasUnproduced() {
            unflushed.insert(number)
            scheduleFlush(number)
        }
        return database
    }

    /// Opens a partition's database; with a changelog, level with it first (`PartitionCatchUp`).
    private func openCaughtUp(_ number: Int32) async throws -> PartitionDatabase {
        guard let changelog else {
            return try PartitionDatabase.open(directory: directory, partition: number, migrator: migrator)
        }
        restoring.insert(number)
        restoreStops.set.withLock { _ = $0.remove(number) }
        defer {
            restoring.remove(number)
            restoreStops.set.withLock { _ = $0.remove(number) }
        }
        let stops = restoreStops
        let catchUp = PartitionCatchUp(directory: directory, migrator: migrator, changelog: changelog, logger: logger)
        return try await catchUp.open(number) { stops.set.withLock { $0.contains(number) } }
    }

    package func partitionsRevoked(_ partitions: [TopicPartition], lost: Bool) async {
        for number in Set(partitions.map(\.partition)).sorted() {
            assigned.removeValue(forKey: number)
            if faults.isPaused(number) {
                faults.forget(number)
                Self.pausedGauge.record(faults.paused.count)
            }
            if restoring.contains(number) {
                // Revoked while its restore runs: the restore stops after its current transaction, and what it applied
                // stays for the next restore of this database to go on from.
                restoreStops.set.withLock { _ = $0.insert(number) }
                continue
            }
            guard databases[number] != nil else { continue }
            if lost { changelogHeld.insert(number) }
            // A lost partition belongs to another member already: nothing of it is drained. Its outbox is still
            // produced (best effort): outputs carry deterministic ids, so the new owner's consumers dedupe them.
            if !lost { await hooks?.partitionDraining(number) }
            let flushed = await flush(number)
            flushRequested.remove(number)
            if let task = flushTasks[number] { await task.value }
            changelogHeld.remove(number)
            guard let database = databases.removeValue(forKey: number) else { continue }
            unflushed.remove(number)
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

    // MARK: Batches and failures

    /// Applies one partition's records of a batch (`PartitionDatabase.applyBatch(_:apply:deadLetter:)`) and asks for
    /// its outbox to be produced; returns the outbox records, or nil when nothing was applied: the partition is not
    /// open here, or it is paused (its records are read again from its stored offsets when it resumes), or its
    /// database failed now (it is paused).
    package func apply(
        _ partition: TopicPartition, _ records: [KafkaRecord],
        apply: @escaping @Sendable (Database, KafkaRecord) throws -> [PendingOutput],
        deadLetter: @escaping @Sendable (KafkaRecord, String) -> PendingOutput
    ) async -> [OutboxRecord]? {
        let number = partition.partition
        guard !faults.isPaused(number) else { return nil }
        guard let database = databases[number] else {
            // Not ours (any more): the records are not consumed here and the next owner reads them.
            logger.warning("batch for a partition not open", metadata: ["partition": "\(partition)"])
            return nil
        }
        do {
            let applied = try await database.applyBatch(records, apply: apply, deadLetter: deadLetter)
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
        guard newly, let topics = assigned[number] else { return }
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
        guard faults.isPaused(number), let topics = assigned[number] else { return }
        do {
            let database = try await openPartition(number, assigned: topics)
            let starts = try await Self.starts(of: topics, in: database)
            faults.resumed(number)
            Self.pausedGauge.record(faults.paused.count)
            try await flow?.resume(topics, at: starts)
            logger.notice("partition resumed", metadata: ["partition": "\(number)"])
        } catch {
            await pause(number, error: error)
        }
    }

    // MARK: Outbox

    /// Asks for a partition's outbox to be produced, without waiting for it.
    package func scheduleFlush(_ number: Int32) {
        guard databases[number] != nil else { return }
        flushRequested.insert(number)
        guard flushTasks[number] == nil else { return }
        flushTasks[number] = Task { await self.drainFlushes(number) }
    }

    /// Produces a partition's outbox now (after the flush in progress, if any); returns whether it is empty.
    @discardableResult
    package func flush(_ number: Int32) async -> Bool {
        scheduleFlush(number)
        if let task = flushTasks[number] { await task.value }
        return databases[number] != nil && !unflushed.contains(number)
    }

    /// The relay's round: every partition whose outbox a produce left behind.
    package func flushUnflushed() {
        for number in unflushed.sorted() { scheduleFlush(number) }
    }

    private func drainFlushes(_ number: Int32) async {
        while flushRequested.remove(number) != nil, let database = databases[number] {
            do {
                try await database.produceOutbox(with: publisher, changelog: !changelogHeld.contains(number))
                unflushed.remove(number)
            } catch {
                unflushed.insert(number)
                logger.warning(
                    "outbox not produced yet; retried by the relay", metadata: ["partition": "\(number)", "error": "\(error)"])
                flushRequested.remove(number)
            }
        }
        flushTasks[number] = nil
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
