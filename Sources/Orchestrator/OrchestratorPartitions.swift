import Foundation
import GRDB
import Logging
import Metrics
import PartitionStore
import OrchestratorDomain
import ServiceLifecycle
import ServiceSupport
import Shared

/// The orchestrator's partitions: on the generic owner (which opens, flushes and closes their databases), applies
/// batches of `herald.ingest` and `herald.deliveries`, follows the configuration, runs timers and segment backfills.
actor OrchestratorPartitions: PartitionHooks, KafkaRebalanceListener {
    nonisolated let owner: PartitionOwner
    let logger: Logger

    /// How long a record id is remembered: a replay older than this is applied again.
    let dedupeRetention: Duration

    /// Segments and campaigns from `herald.config`; nil until the topic was read whole (nothing is consumed before).
    private(set) var rules: EngagementRules?
    private let clock: @Sendable () -> Date
    /// Segments to backfill per partition, and where each stands.
    private var backfills: [Int32: Backfill] = [:]
    /// The keyed topics' partition count (HERALD_TOPIC_PARTITIONS): campaigns' rate limits are shared by them.
    private let partitions: Int
    /// How many in-app sync tags each partition keeps (`ReadTagCache`; 0: none).
    private let readTagCapacity: Int
    /// Each open partition's earliest timer (`DueHints`): a tick reads only the partitions where one may be due.
    private var timerHints: [Int32: DueHints] = [:]

    /// A partition's backfill: the segments left (the first in progress; where it stands is in the database), and
    /// progress for the logs.
    struct Backfill {
        var segments: [String]
        var total: Int
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
        directory: String, producer: any OutboxPublisher, changelog: ChangelogSettings? = nil, logger: Logger,
        dedupeRetention: Duration = .seconds(30 * 86_400), partitions: Int = 1, cachedTags: Int = OrchestratorConfig.defaultInAppCachedTags,
        clock: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.partitions = partitions
        // The instance may run every partition: each keeps its share.
        self.readTagCapacity = cachedTags == 0 ? 0 : (cachedTags + partitions - 1) / max(1, partitions)
        self.owner = PartitionOwner(
            directory: directory, service: "orchestrator", migrator: OrchestratorSchema.migrator, publisher: producer,
            changelog: changelog, logger: logger)
        self.logger = logger
        self.dedupeRetention = dedupeRetention
        self.clock = clock
        owner.setHooks(self)
    }

    // MARK: Configuration

    /// A new configuration (read whole at start, then each change): every open partition catches up with it.
    func setConfiguration(_ config: HeraldConfiguration) async {
        let rules = EngagementRules(config: config, clock: clock, partitions: partitions)
        self.rules = rules
        logger.info(
            "configuration loaded",
            metadata: [
                "segments": "\(config.segments.count)", "campaigns": "\(config.campaigns.count)",
                "templates": "\(config.templates.count)",
            ])
        for (_, database) in await owner.openDatabases { await reconcile(database) }
    }

    private func reconcile(_ database: PartitionDatabase) async {
        let number = database.partition
        guard let rules else { return }
        do {
            let pending = try await OrchestratorPartition(database).reconcile(rules: rules)
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

    /// Runs due timers of every running partition, then backfill chunks for up to `budget`; returns whether work is
    /// left (the caller comes back at once instead of sleeping). Each is work on its partition (`PartitionOwner.run`):
    /// a revocation waits for it, and its transaction and outputs go out with the partition's last flush.
    func tick(budget: Duration = .milliseconds(500)) async -> Bool {
        guard let rules else { return false }
        var more = false
        // Only running partitions (a paused one's database fails: its timers and backfills wait for it to resume).
        // Partitions run their timers at once, each on its own database's writer, so that a release due in several
        // partitions (a local-time broadcast's zone, a schedule) uses every core.
        // Only partitions whose hint says a timer may be due are read: an idle instance reads nothing.
        let now = rules.clock()
        let running = await owner.runningPartitions.compactMap { number -> (Int32, DueHints)? in
            guard let hints = timerHints[number], hints.isDue(OrchestratorPartition.timersDue, at: now) else { return nil }
            return (number, hints)
        }
        let (owner, logger) = (self.owner, self.logger)
        let ran = await withTaskGroup(of: Int.self) { group in
            for (number, hints) in running {
                group.addTask {
                    do {
                        return try await owner.run(on: number) { database in
                            let (ran, outbox) = try await OrchestratorPartition(database).runTimers(rules: rules, hints: hints)
                            if !outbox.isEmpty { await owner.flush(number) }
                            return ran
                        } ?? 0
                    } catch {
                        hints.invalidate(OrchestratorPartition.timersDue)
                        logger.error("timers failed", metadata: ["partition": "\(number)", "error": "\(error)"])
                        return 0
                    }
                }
            }
            return await group.reduce(0, +)
        }
        // Timers that ran may have left work due at once (a paged schedule or release sets its timer again, still
        // due): come back without sleeping; the next look finds nothing due when none is left.
        if ran > 0 { more = true }
        let deadline = ContinuousClock.now + budget
        for number in backfills.keys.sorted() {
            while var job = backfills[number], let segment = job.segments.first, ContinuousClock.now < deadline {
                var done = true
                do {
                    guard let chunk = try await owner.run(on: number, { database in
                        try await OrchestratorPartition(database).backfill(rules: rules, segment: segment)
                    }) else { break }  // not running: the partition's next opening asks again
                    done = chunk.done
                    job.evaluated += chunk.evaluated
                    // Not started for this configuration yet (its reconcile is on its way): the next tick asks again.
                    if !done && chunk.evaluated == 0 { break }
                } catch {
                    // Left as is (schedules over it wait): the next configuration change (or the partition's next
                    // opening) asks again.
                    logger.error(
                        "segment backfill failed",
                        metadata: ["partition": "\(number)", "segment": "\(segment)", "error": "\(error)"])
                }
                // Revoked and closed once the chunk was done: its next opening asks again.
                guard backfills[number] != nil else { break }
                if done { job.segments.removeFirst() }
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

    /// Counts the sends quiet hours hold in this instance's running partitions, and when the first goes:
    /// `herald_quiet_window_held` and `herald_quiet_window_next_release_timestamp_seconds` (0 when none is held), which
    /// the status board shows.
    func countHeld() async {
        var count = 0
        var next: Date?
        for number in await owner.runningPartitions {
            do {
                guard let held = try await owner.run(on: number, { try await OrchestratorPartition($0).heldSends() }) else { continue }
                count += held.count
                if let first = held.next, next.map({ first < $0 }) ?? true { next = first }
            } catch {
                logger.warning("held sends not counted", metadata: ["partition": "\(number)", "error": "\(error)"])
            }
        }
        Self.heldGauge.record(count)
        Self.nextReleaseGauge.record(next?.timeIntervalSince1970 ?? 0)
    }

    /// `herald_journey_waiting` (`countWaiting`).
    let waitingGauge = JourneyWaitingGauge()

    private static let heldGauge = Gauge(label: "herald_quiet_window_held")
    private static let nextReleaseGauge = Gauge(label: "herald_quiet_window_next_release_timestamp_seconds")

    /// Whether the partition's timer hint says a timer may be due at `time` (nil: the partition is not open here).
    func timerHintDue(_ partition: Int32, at time: Date) -> Bool? {
        timerHints[partition]?.isDue(OrchestratorPartition.timersDue, at: time)
    }

    /// Segment backfills not finished yet (for health and tests).
    var backfillsPending: Int { backfills.values.reduce(0) { $0 + $1.segments.count } }

    /// The segments a profile is in, if a partition of this instance holds it.
    func segments(key: String) async throws -> [String]? {
        for (_, database) in await owner.openDatabases {
            if try await database.read({ try ProfileView.json($0, key: key) }) != nil { return try await OrchestratorPartition(database).segments(of: key) }
        }
        return nil
    }

    // MARK: KafkaRebalanceListener: the owner's, which calls back the hooks below

    func partitionsAssigned(_ partitions: [TopicPartition]) async throws -> [TopicPartition: KafkaStartOffset] {
        try await owner.partitionsAssigned(partitions)
    }

    func partitionsRevoked(_ partitions: [TopicPartition], lost: Bool) async {
        await owner.partitionsRevoked(partitions, lost: lost)
    }

    // MARK: PartitionHooks

    func partitionOpened(_ database: PartitionDatabase, assigned: [TopicPartition]) async throws {
        // First: from here on, every change of a profile's rows drops its in-app tags, and every timer set lowers the
        // partition's timer hint.
        if readTagCapacity > 0 { try await database.keepReadTags(owners: OrchestratorSchema.rowOwners, capacity: readTagCapacity) }
        let hints = DueHints()
        try await OrchestratorPartition.watchTimers(hints, in: database)
        timerHints[database.partition] = hints
        // Records an earlier version kept for later (ops it did not implement): applied now, before new ones.
        let outbox = try await OrchestratorPartition(database).applyDeferred { db, record in try OrchestratorApplier.apply(db, record: record) }
        if !outbox.isEmpty {
            logger.info(
                "deferred records applied", metadata: ["partition": "\(database.partition)", "outputs": "\(outbox.count)"])
        }
        await reconcile(database)
    }

    /// Batches never overlap a revocation (both run in the consumer's iteration); the ticker's timers, backfill chunks
    /// and retention rounds are work the owner waited for: nothing is left to record.
    func partitionDrained(_ partition: Int32, workLeft: Int) async {}

    func partitionClosed(_ partition: Int32) async {
        backfills.removeValue(forKey: partition)
        timerHints.removeValue(forKey: partition)
    }

    // MARK: Batches

    /// Applies a batch: per partition, one transaction for state, offsets and outbox; then asks for the outbox to be
    /// produced, without waiting: the next batch is applied while the relay produces this one's outputs (in order,
    /// one flush at a time per partition). Waiting here put a produce round trip, and the changelog's after it, between
    /// every two batches of every partition: at 2,000 events/s the backlog behind it was most of the latency.
    ///
    /// A record the code cannot apply goes to `herald.dlq` and the partition goes on; a partition whose database fails
    /// is paused and retried, the others go on (`PartitionOwner.apply`).
    func apply(_ batch: KafkaBatch) async {
        let rules = self.rules ?? .none
        for (tp, records) in batch.byPartition {
            _ = await owner.apply(tp, records) { db, record in try OrchestratorApplier.apply(db, record: record, rules: rules) }
        }
    }

    /// The relay's round: flushes every partition whose outbox still holds records, and tries paused partitions again.
    func flushUnflushed() async {
        await owner.flushUnflushed()
        await owner.retryPaused()
    }

    /// The retention round (docs/retention.md), in every open partition: `OrchestratorRetention.tables`, each table with
    /// its rule, logged by figure (ids, receipts, decisions, frequency_log).
    func applyRetention(now: Date? = nil) async {
        let now = now ?? clock()
        let window = dedupeRetention.timeInterval
        let rules = self.rules
        for number in await owner.runningPartitions {
            do {
                let context = OrchestratorRetention.Context(rules: rules, now: now, dedupeWindow: window)
                guard let pruned = try await owner.run(on: number, { try await OrchestratorRetention.apply($0, context) }) else { continue }
                if pruned.values.contains(where: { $0 > 0 }) {
                    var metadata: Logger.Metadata = ["partition": "\(number)"]
                    for figure in OrchestratorRetention.Figure.allCases { metadata[figure.rawValue] = "\(pruned[figure] ?? 0)" }
                    logger.info("retention applied", metadata: metadata)
                }
            } catch {
                logger.warning("retention failed", metadata: ["partition": "\(number)", "error": "\(error)"])
            }
        }
    }

    // MARK: Reads

    /// The profile with this key, if a partition of this instance holds it.
    func profile(key: String) async throws -> JSONValue? {
        try await find { try ProfileView.json($0, key: key) }
    }

    /// Every row of every profile `identifier` reaches in `partitions`, each running here; nil when one is not
    /// (`ProfileLookup`, `ProfileRows.export`).
    func export(
        project: String, _ identifier: ProfileLookup.Identifier, tokens: Bool, in partitions: [Int32]
    ) async throws -> [ProfileExportResponse.Row]? {
        try await ProfileRows.export(owner, in: partitions, tokens: tokens) { db in try ProfileLookup.keys(db, project: project, identifier) }
    }

    /// The first answer of `reader` from this instance's partitions.
    func find(_ reader: @escaping @Sendable (Database) throws -> JSONValue?) async throws -> JSONValue? {
        for (_, database) in await owner.openDatabases {
            if let json = try await database.read(reader) { return json }
        }
        return nil
    }

    var openPartitions: [Int32] { get async { await owner.openPartitions } }
}
