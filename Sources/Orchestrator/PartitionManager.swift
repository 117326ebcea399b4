import Foundation
import Logging
import ProfileStore
import ServiceLifecycle
import Shared

/// Owns the databases of the partitions assigned to this instance: opens each on assignment (and resumes at its stored
/// offsets), applies batches, relays the outbox after each commit, and closes on revocation.
actor PartitionManager: KafkaRebalanceListener {
    let directory: String
    private let producer: KafkaProducer
    private let logger: Logger
    private var databases: [Int32: PartitionDatabase] = [:]
    /// Partitions whose outbox still holds records (found on opening, or a produce failed): flushed by the relay
    /// every second and after the partition's next batch.
    private var unflushed: Set<Int32> = []
    /// Partitions being flushed now; a second flush of the same one waits for the next round.
    private var flushing: Set<Int32> = []

    /// How long a record id is remembered: a replay older than this is applied again.
    let dedupeRetention: Duration

    /// Segments and campaigns from `herald.config`; nil until the topic was read whole (nothing is consumed before).
    private(set) var rules: EngagementRules?
    private let clock: @Sendable () -> Date
    /// Segments to backfill per partition, and where each stands.
    private var backfills: [Int32: Backfill] = [:]

    /// A partition's backfill: the segments left (the first in progress, from `after`), and progress for the logs.
    struct Backfill {
        var segments: [String]
        var total: Int
        var after: String?
        var evaluated = 0
        var started = ContinuousClock.now
        var lastReport = ContinuousClock.now

        var metadata: Logger.Metadata {
            let elapsed = ContinuousClock.now - started
            let seconds = elapsed.timeInterval
            return [
                "segments_done": "\(total - segments.count)", "segments": "\(total)", "profiles": "\(evaluated)",
                "profiles_per_second": "\(Int(Double(evaluated) / max(seconds, 0.001)))",
            ]
        }
    }

    init(
        directory: String, producer: KafkaProducer, logger: Logger, dedupeRetention: Duration = .seconds(30 * 86_400),
        clock: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.directory = directory
        self.producer = producer
        self.logger = logger
        self.dedupeRetention = dedupeRetention
        self.clock = clock
    }

    // MARK: Configuration

    /// A new configuration (read whole at start, then each change): every open partition catches up with it.
    func setConfiguration(_ config: HeraldConfiguration) async {
        let rules = EngagementRules(config: config, clock: clock)
        self.rules = rules
        logger.info(
            "configuration loaded",
            metadata: [
                "segments": "\(config.segments.count)", "campaigns": "\(config.campaigns.count)",
                "templates": "\(config.templates.count)",
            ])
        for number in databases.keys.sorted() { await reconcile(number) }
    }

    private func reconcile(_ number: Int32) async {
        guard let rules, let database = databases[number] else { return }
        do {
            let pending = try await database.reconcile(rules: rules)
            guard !pending.isEmpty else {
                backfills.removeValue(forKey: number)
                return
            }
            backfills[number] = Backfill(segments: pending, total: pending.count)
            logger.info(
                "segment backfill started",
                metadata: ["partition": "\(number)", "segments": .string(pending.joined(separator: ","))])
        } catch {
            logger.error("configuration not applied to partition", metadata: ["partition": "\(number)", "error": "\(error)"])
        }
    }

    // MARK: Timers and backfills

    /// Runs due timers of every open partition, then backfill chunks for up to `budget`; returns whether work is left
    /// (the caller comes back at once instead of sleeping).
    func tick(budget: Duration = .milliseconds(500)) async -> Bool {
        guard let rules else { return false }
        var more = false
        for (number, database) in databases.sorted(by: { $0.key < $1.key }) {
            do {
                let (ran, outbox) = try await database.runTimers(rules: rules)
                if ran == 1000 { more = true }
                if !outbox.isEmpty { await flushOutbox(number) }
            } catch {
                logger.error("timers failed", metadata: ["partition": "\(number)", "error": "\(error)"])
            }
        }
        let deadline = ContinuousClock.now + budget
        for number in backfills.keys.sorted() {
            while var job = backfills[number], let segment = job.segments.first, ContinuousClock.now < deadline,
                let database = databases[number]
            {
                do {
                    let chunk = try await database.backfill(rules: rules, segment: segment, after: job.after)
                    job.after = chunk.last
                    job.evaluated += chunk.evaluated
                } catch {
                    // Left as is: the next configuration change (or the partition's next opening) asks again.
                    logger.error(
                        "segment backfill failed",
                        metadata: ["partition": "\(number)", "segment": "\(segment)", "error": "\(error)"])
                    job.after = nil
                }
                if job.after == nil { job.segments.removeFirst() }
                if job.segments.isEmpty {
                    backfills.removeValue(forKey: number)
                    logger.info("segment backfill done", metadata: job.metadata.merging(["partition": "\(number)"]) { $1 })
                    break
                }
                if ContinuousClock.now - job.lastReport >= .seconds(10) {
                    job.lastReport = ContinuousClock.now
                    logger.info(
                        "segment backfill progress",
                        metadata: job.metadata.merging(["partition": "\(number)", "segment": "\(segment)"]) { $1 })
                }
                backfills[number] = job
            }
        }
        return more || !backfills.isEmpty
    }

    /// Segment backfills not finished yet (for health and tests).
    var backfillsPending: Int { backfills.values.reduce(0) { $0 + $1.segments.count } }

    /// The segments a profile is in, if a partition of this instance holds it.
    func segments(key: String) async throws -> [String]? {
        for database in databases.values {
            if try await database.read({ try ProfileView.json($0, key: key) }) != nil { return try await database.segments(of: key) }
        }
        return nil
    }

    // MARK: KafkaRebalanceListener

    func partitionsAssigned(_ partitions: [TopicPartition]) async throws -> [TopicPartition: KafkaStartOffset] {
        var starts: [TopicPartition: KafkaStartOffset] = [:]
        for number in Set(partitions.map(\.partition)).sorted() {
            let isNew = databases[number] == nil
            let database = try databases[number] ?? PartitionDatabase.open(directory: directory, partition: number)
            databases[number] = database
            if isNew {
                // Records an earlier version kept for later (ops it did not implement): applied now, before new ones.
                let outbox = try await database.applyDeferred { db, record in try ProfileApplier.apply(db, record: record) }
                if !outbox.isEmpty {
                    logger.info(
                        "deferred records applied", metadata: ["partition": "\(number)", "outputs": "\(outbox.count)"])
                }
            }
            if isNew { await reconcile(number) }
            let offsets = try await database.nextOffsets()
            for tp in partitions where tp.partition == number {
                starts[tp] = offsets[tp.topic].map(KafkaStartOffset.offset) ?? .beginning
            }
            // Output committed before a crash or a revocation but not yet produced: the relay produces it. Not here,
            // where a broker outage would hold the whole group's rebalance.
            if !(try await database.pendingOutbox(limit: 1).isEmpty) { unflushed.insert(number) }
        }
        logger.info(
            "partition databases open",
            metadata: ["partitions": .string(databases.keys.sorted().map(String.init).joined(separator: ","))])
        return starts
    }

    func partitionsRevoked(_ partitions: [TopicPartition], lost: Bool) async {
        for number in Set(partitions.map(\.partition)).sorted() {
            guard let database = databases.removeValue(forKey: number) else { continue }
            backfills.removeValue(forKey: number)
            // Best effort, and only while the broker answers: what stays in the outbox is produced when the partition
            // is opened again. Lost partitions belong to another member already.
            if !lost && !unflushed.contains(number) { await flush(database) }
            unflushed.remove(number)
            do { try database.close() } catch { logger.warning("closing partition database failed", metadata: ["error": "\(error)"]) }
        }
    }

    // MARK: Batches

    /// Applies a batch: per partition, one transaction for state, offsets and outbox; then produces the outbox.
    func apply(_ batch: KafkaBatch) async throws {
        for (tp, records) in batch.byPartition {
            guard let database = databases[tp.partition] else {
                // Not ours (any more): the records are not consumed here and the next owner reads them.
                logger.warning("batch for a partition not open", metadata: ["partition": "\(tp)"])
                continue
            }
            let rules = self.rules ?? .none
            let outbox = try await database.applyBatch(records) { db, record in
                try ProfileApplier.apply(db, record: record, rules: rules)
            }
            if !outbox.isEmpty || unflushed.contains(tp.partition) {
                await flushOutbox(tp.partition)
            }
        }
    }

    private func flushOutbox(_ number: Int32) async {
        guard let database = databases[number] else {
            unflushed.remove(number)
            return
        }
        guard flushing.insert(number).inserted else { return }
        let done = await flush(database)
        flushing.remove(number)
        if done || databases[number] == nil { unflushed.remove(number) } else { unflushed.insert(number) }
    }

    /// Flushes every partition whose outbox still holds records (the relay's round).
    func flushUnflushed() async {
        for number in unflushed.sorted() { await flushOutbox(number) }
    }

    /// Forgets record ids older than the dedupe window in every open partition.
    func pruneDedupe(now: Date = Date()) async {
        let cutoff = now.addingTimeInterval(-dedupeRetention.timeInterval)
        for (number, database) in databases.sorted(by: { $0.key < $1.key }) {
            do {
                let pruned = try await database.pruneApplied(before: cutoff)
                if pruned > 0 {
                    logger.info("dedupe window pruned", metadata: ["partition": "\(number)", "ids": "\(pruned)"])
                }
            } catch {
                logger.warning("dedupe pruning failed", metadata: ["partition": "\(number)", "error": "\(error)"])
            }
        }
    }

    /// Produces every pending outbox record of `database`, oldest first, and forgets those acknowledged.
    @discardableResult
    private func flush(_ database: PartitionDatabase) async -> Bool {
        do {
            try await database.produceOutbox(with: producer)
            return true
        } catch {
            logger.warning(
                "outbox not produced yet; retried after the next batch",
                metadata: ["partition": "\(database.partition)", "error": "\(error)"])
            return false
        }
    }

    // MARK: Reads

    /// The profile with this key, if a partition of this instance holds it.
    func profile(key: String) async throws -> JSONValue? {
        for database in databases.values {
            if let json = try await database.read({ try ProfileView.json($0, key: key) }) { return json }
        }
        return nil
    }

    var openPartitions: [Int32] { databases.keys.sorted() }
}

/// Runs due timers (segment time flips, campaign delays, schedules) and segment backfills: every 100 ms, or at once
/// while work is left, so that a due timer runs well within a second.
struct EngagementTicker: Service {
    let manager: PartitionManager
    var interval: Duration = .milliseconds(100)

    func run() async throws {
        while !Task.isCancelled && !Task.isShuttingDownGracefully {
            if await manager.tick() { continue }
            try? await Task.sleep(for: interval)
        }
    }
}

/// Produces outbox records left behind (after a restart, or while the broker was down) once a second, and prunes the
/// dedupe window every ten minutes, until shutdown.
struct OutboxRelay: Service {
    let manager: PartitionManager
    var interval: Duration = .seconds(1)
    var pruneEvery = 600

    func run() async throws {
        var round = 0
        while !Task.isCancelled && !Task.isShuttingDownGracefully {
            await manager.flushUnflushed()
            if round % pruneEvery == 0 { await manager.pruneDedupe() }
            round += 1
            try? await Task.sleep(for: interval)
        }
    }
}
