import Foundation
import GRDB
import Logging
import PartitionStore
import ServiceSupport
import Shared

/// The notifier's partitions, on the generic owner (which opens, flushes and closes their databases). The consumer
/// only writes to them (contacts and queued sends, with the offsets, in one transaction per batch), so it never waits
/// on a provider; the delivery workers claim due attempts from them and write the results back.
///
/// A claim is work on its partition (`PartitionOwner.run(on:)`), and each attempt it hands out is held work until its
/// result is recorded (`hold`/`release`): a partition taken away is drained by its owner, which claims nothing more of
/// it and waits (up to `drainTimeout`) for the provider calls in flight, whose outcomes are recorded and reported before
/// the database is closed. An outcome that arrives later still goes to `herald.deliveries`, straight to the broker, so
/// that the next owner's ledger handover learns it (docs/partitions.md).
actor NotifierPartitions: PartitionHooks, KafkaRebalanceListener {
    /// How long an attempt found `sending` at an opening is in doubt (the longest provider attempt and a margin): it is
    /// made again only after that, since another instance may still answer it and report the outcome.
    let attemptsInDoubt: Duration
    nonisolated let owner: PartitionOwner
    private let logger: Logger
    /// `project/app` → platform, for push fan-out.
    let origins: [String: Eligibility.Origin]
    /// Which webhook attempts may go (disabled endpoints, lanes per endpoint); a gate with no endpoint disabled when
    /// the service does not set one.
    nonisolated let webhookGate: WebhookGate
    /// The suppression list (`herald.suppressions`, folded by the service's follower): checked at every email and SMS
    /// attempt.
    nonisolated let suppressions: SuppressionList
    private let clock: @Sendable () -> Date
    /// Called after a batch brought sends of a channel (wakes its worker).
    private var wake: [MessageChannel: @Sendable () -> Void] = [:]
    /// Each channel's worker, when attached (`attach`): the sends a batch brings are claimed in the batch's transaction
    /// and handed to it.
    private var workers: [MessageChannel: DeliveryWorker] = [:]
    /// The partitions' watermarks, asked of the broker (the service sets the consumer's query; without it no handover
    /// is waited for).
    private var watermarks: (@Sendable (TopicPartition) async throws -> (low: Int64, high: Int64))?
    /// Ledger handover: partitions whose `herald.deliveries` is read up to this end offset before anything of theirs is
    /// claimed, so that targets their previous owner finished are not sent again (docs/notifier.md#partition-handover).
    private var handover: [Int32: (ends: [String: Int64], started: Date)] = [:]
    /// Results whose recording failed, per partition: written again at each relay round (the partition is paused
    /// meanwhile), reported straight to the broker if the partition goes first.
    private var unrecorded: [Int32: [(results: [AttemptResults.AttemptResult], retry: RetryPolicy)]] = [:]
    /// Per channel, the partitions a batch brought work to since the last claim looked at them, and when a claim last
    /// looked at every partition (`claim`'s `fullScan`).
    private var hinted: [MessageChannel: Set<Int32>] = [:]
    private var lastFullScan: [MessageChannel: ContinuousClock.Instant] = [:]
    /// Each open partition's earliest due attempt per channel (`DueHints`, a channel's raw value its kind): a full scan
    /// reads only the partitions where one may be due.
    private var workHints: [Int32: DueHints] = [:]

    init(
        directory: String, producer: any OutboxPublisher, changelog: ChangelogSettings? = nil, catalog: AppsCatalog,
        logger: Logger, drainTimeout: Duration = .seconds(35), attemptsInDoubt: Duration = .zero,
        webhookGate: WebhookGate = WebhookGate(perEndpoint: 10, lapse: .seconds(300)), suppressions: SuppressionList = SuppressionList(),
        clock: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.attemptsInDoubt = attemptsInDoubt
        self.webhookGate = webhookGate
        self.suppressions = suppressions
        self.owner = PartitionOwner(
            directory: directory, service: "notifier", migrator: NotifierSchema.migrator, publisher: producer,
            changelog: changelog, drainTimeout: drainTimeout, logger: logger)
        self.logger = logger
        self.clock = clock
        var origins: [String: Eligibility.Origin] = [:]
        for project in catalog.projects {
            for app in project.apps { origins["\(project.id)/\(app.id)"] = .app(app.platform) }
            // A Segment source's anonymous ids are installation-like but no device: never a push target.
            for source in project.sources { origins["\(project.id)/\(source.id)"] = .segmentSource }
        }
        self.origins = origins
        owner.setHooks(self)
    }

    func onSends(_ channel: MessageChannel, _ body: @escaping @Sendable () -> Void) { wake[channel] = body }

    /// The channel's worker: woken when a batch brings work it did not claim, and handed the attempts a batch's
    /// transaction claimed.
    func attach(_ worker: DeliveryWorker) {
        workers[worker.channel] = worker
        wake[worker.channel] = { worker.wake() }
    }

    func onWatermarks(_ body: @escaping @Sendable (TopicPartition) async throws -> (low: Int64, high: Int64)) {
        watermarks = body
    }

    /// Whether the partition's hint says an attempt of `channel` may be due at `time` (nil: the partition is not open).
    func workHintDue(_ partition: Int32, _ channel: MessageChannel, at time: Date) -> Bool? {
        workHints[partition]?.isDue(channel.rawValue, at: time)
    }

    /// Whether the partition's deliveries are still being read back (nothing of it is claimed meanwhile).
    func isHandingOver(_ partition: Int32) -> Bool { handover[partition] != nil }

    /// Attempts of the partition claimed and not completed yet (the owner's work held on it: nothing else of the
    /// notifier outlives a call).
    func attemptsInFlight(_ partition: Int32) async -> Int { await owner.workInProgress(on: partition) }

    // MARK: KafkaRebalanceListener: the owner's, which calls back the hooks below

    func partitionsAssigned(_ partitions: [TopicPartition]) async throws -> [TopicPartition: KafkaStartOffset] {
        let starts = try await owner.partitionsAssigned(partitions)
        // New partitions may hold work already: every partition is looked at next.
        lastFullScan.removeAll()
        for body in wake.values { body() }
        return starts
    }

    func partitionsRevoked(_ partitions: [TopicPartition], lost: Bool) async {
        await owner.partitionsRevoked(partitions, lost: lost)
    }

    // MARK: PartitionHooks

    func partitionOpened(_ database: PartitionDatabase, assigned: [TopicPartition]) async throws {
        let number = database.partition
        // First: from here on, every row made due (the recovery below included) lowers the partition's hints.
        let hints = DueHints()
        try await hints.watch(database, function: "herald_due", triggers: SendsTable.dueTriggers)
        workHints[number] = hints
        // Rows left `sending` by a stop are attempted again. Not while this process still has calls out for the
        // partition (it came back before a drain that timed out was over): their answers finish those rows.
        let stillOut = await attemptsInFlight(number)
        let inDoubt = attemptsInDoubt
        let recovered = stillOut > 0 ? 0 : try await database.write { db in try LedgerTable(db).recoverInFlight(inDoubt: inDoubt) }
        // Webhook messages parked for an endpoint enabled again while the partition was elsewhere go now.
        let disabled = webhookGate.disabledEndpoints.sorted()
        let given = try await database.write { db in try LedgerTable(db).unpark(endpoint: nil, disabled: disabled, at: Date()) }
        if given > 0 {
            logger.info("parked webhook messages of endpoints not disabled are pending again", metadata: ["partition": "\(number)", "messages": "\(given)"])
        }
        if stillOut > 0 {
            logger.info(
                "partition back with attempts still in flight; their answers finish them",
                metadata: ["partition": "\(number)", "attempts": "\(stillOut)"])
        }
        if recovered > 0 {
            logger.warning(
                "attempts in flight at the last stop are made again once their answer can no longer come",
                metadata: ["partition": "\(number)", "attempts": "\(recovered)", "in_doubt_seconds": "\(inDoubt.components.seconds)"])
        }
        // The reports written since this database last read them (all of them for a new database), and the contact
        // snapshots: until both are applied up to where they ended now, the partition's sends wait. Without the
        // contacts, a send read during the catch-up could find its contact not read yet, wait its 2 s and be
        // suppressed while the snapshot that makes it reachable is still in the backlog.
        let topics = [HeraldTopic.deliveries, HeraldTopic.contacts].map { TopicPartition($0.name, number) }
        guard assigned.contains(topics[0]), let watermarks else { return }
        // Held from now: a worker's claim may run on this actor while the broker answers.
        handover[number] = ([:], clock())
        let stored = try await database.nextOffsets()
        var ends: [String: Int64] = [:]
        var ranges: Logger.Metadata = [:]
        do {
            for tp in topics where assigned.contains(tp) {
                let marks = try await watermarks(tp)
                let from = max(stored[tp.topic] ?? marks.low, marks.low)
                guard from < marks.high else { continue }
                ends[tp.topic] = marks.high
                ranges[tp.topic == HeraldTopic.deliveries.name ? "from" : "contacts_from"] = "\(from)"
                ranges[tp.topic == HeraldTopic.deliveries.name ? "to" : "contacts_to"] = "\(marks.high)"
            }
        } catch {
            handover.removeValue(forKey: number)
            throw error
        }
        if ends.isEmpty {
            handover.removeValue(forKey: number)
        } else {
            handover[number] = (ends, clock())
            ranges["partition"] = "\(number)"
            logger.info("ledger handover: reading the partition's delivery reports and contacts before sending", metadata: ranges)
        }
    }

    /// The owner waited (up to `drainTimeout`) for the partition's claims and attempts in flight: results a failure
    /// left are written to the ledger with their reports now (the owner flushes them after this).
    func partitionDrained(_ partition: Int32, workLeft: Int) async {
        await recordLeftovers(partition)
    }

    func partitionClosed(_ partition: Int32) async {
        handover.removeValue(forKey: partition)
        workHints.removeValue(forKey: partition)
        // Results its database would not take, even at the drain: reported straight to the broker.
        for (results, _) in unrecorded.removeValue(forKey: partition) ?? [] { await reportLate(partition, results) }
    }

    // MARK: Consuming

    /// Applies a batch per partition (`PartitionOwner.apply`: a record the code cannot apply goes to `herald.dlq`, a
    /// partition whose database fails is paused and retried), and in the same transaction claims the attempts due of
    /// the channels whose sends it brought, up to the room their workers reserve (`claimBrought`); wakes the workers of
    /// the channels it brought work to that is still unclaimed.
    func apply(_ batch: KafkaBatch) async {
        var channels: Set<MessageChannel> = []
        let byPartition = batch.byPartition
        for (tp, records) in byPartition {
            var brought: Set<MessageChannel> = []
            defer {
                for channel in brought { hinted[channel, default: []].insert(tp.partition) }
                channels.formUnion(brought)
            }
            var sends: Set<MessageChannel> = []
            for record in records {
                switch HeraldTopic(rawValue: record.topic) {
                case .sendsPush: sends.insert(.push)
                case .sendsEmail: sends.insert(.email)
                case .sendsSMS: sends.insert(.sms)
                case .sendsWebhook: sends.insert(.webhook)
                // A snapshot releases the sends of its profile that were waiting for it.
                case .contacts: brought.formUnion(MessageChannel.allCases)
                default: break
                }
            }
            let now = clock()
            let claiming = reserveClaims(sends, partition: tp.partition, share: byPartition.count)
            let applied = await owner.apply(
                tp, records, apply: { db, record in try NotifierApplier.apply(db, record: record, now: now) },
                finish: claimBrought(claiming, partition: tp.partition, now: now))
            // What the transaction did not claim (no room, cut by the room, or not claimed at all) is the worker's.
            brought.formUnion(sends.subtracting(claiming.keys))
            brought.formUnion(await handOver(claiming, applied?.finished, partition: tp.partition))
            guard applied != nil else { continue }
            if var pending = handover[tp.partition], let end = pending.ends[tp.topic], let last = records.last?.offset,
                last + 1 >= end
            {
                pending.ends.removeValue(forKey: tp.topic)
                handover[tp.partition] = pending
                if pending.ends.isEmpty {
                    handover.removeValue(forKey: tp.partition)
                    logger.info(
                        "ledger handover done",
                        metadata: [
                            "partition": "\(tp.partition)",
                            "seconds": "\(String(format: "%.1f", clock().timeIntervalSince(pending.started)))",
                        ])
                    brought.formUnion(MessageChannel.allCases)
                }
            }
        }
        for channel in channels { wake[channel]?() }
    }

    /// Room in the workers of `channels` for the attempts a batch's transaction claims in `partition`: an even share of
    /// each window among the batch's partitions (at least one), none while the partition hands over (its sends wait
    /// for the ledger read back) or for a channel without an attached worker.
    private func reserveClaims(_ channels: Set<MessageChannel>, partition: Int32, share partitions: Int) -> [MessageChannel: Int] {
        guard handover[partition] == nil else { return [:] }
        var limits: [MessageChannel: Int] = [:]
        for channel in channels {
            guard let worker = workers[channel] else { continue }
            let taken = worker.reserve(upTo: max(1, worker.window / max(1, partitions)))
            if taken > 0 { limits[channel] = taken }
        }
        return limits
    }

    /// The claims a batch's transaction makes last (`SendClaims.claim`, as a worker's claim does), only while the
    /// partition runs here: a draining partition claims nothing more.
    private func claimBrought(
        _ limits: [MessageChannel: Int], partition: Int32, now: Date
    ) -> PartitionDatabase.BatchFinish<[MessageChannel: [SendClaims.Claimed]]>? {
        guard !limits.isEmpty else { return nil }
        let (owner, origins, hints, gate, suppressions) = (self.owner, self.origins, workHints[partition], webhookGate, self.suppressions)
        return { db in
            guard owner.isRunning(partition) else { return ([:], []) }
            var claimed: [MessageChannel: [SendClaims.Claimed]] = [:]
            var outputs: [PendingOutput] = []
            for (channel, limit) in limits {
                let claim = try Self.claim(
                    db, channel, limit: limit, now: now, origins: origins, hints: hints, gate: gate, suppressions: suppressions)
                claimed[channel] = claim.claimed
                outputs += claim.outputs
            }
            return (claimed, outputs)
        }
    }

    /// Hands what a batch's transaction claimed to the workers, held as the partition's work with the same admission as
    /// a worker's claim (`claim`), and gives back the room it did not use; returns the channels whose claim the room
    /// cut or that were not claimed (the transaction did not run the step): more may be due there, for the worker.
    private func handOver(
        _ limits: [MessageChannel: Int], _ finished: (result: [MessageChannel: [SendClaims.Claimed]], changelogEnd: Int64?)?,
        partition: Int32
    ) async -> Set<MessageChannel> {
        var left: Set<MessageChannel> = []
        for (channel, limit) in limits {
            guard let worker = workers[channel] else { continue }
            guard let finished, let claimed = finished.result[channel] else {
                worker.unreserve(limit)
                left.insert(channel)
                continue
            }
            worker.unreserve(limit - claimed.count)
            if claimed.count == limit { left.insert(channel) }
            guard !claimed.isEmpty else { continue }
            // Held before the batch's iteration ends: a revocation (handled between batches) sees the attempts.
            await owner.hold(claimed.count, on: partition)
            let admission = finished.changelogEnd.map { end in
                Task { await self.admission(partition, through: end, attempts: claimed.count, channel: channel) }
            }
            worker.deliver(claimed.map { ClaimedAttempt(partition: partition, claimed: $0, admission: admission) })
        }
        return left
    }

    // MARK: Delivery

    /// An attempt handed out by `claim`, with its claim's admission (nil: no changelog), one per claim and shared by its
    /// attempts, which the worker awaits (`admitted`) before the provider is called.
    struct ClaimedAttempt: Sendable {
        var partition: Int32
        var claimed: SendClaims.Claimed
        var admission: Task<Bool, Never>?

        /// Whether the attempt may be made (`NotifierPartitions.admission`); false: its hold is released already.
        var admitted: Bool { get async { await admission?.value ?? true } }
    }

    /// Claims up to `limit` due attempts of `channel` across the running partitions (not those handing over). A claim
    /// is work on its partition, and each attempt it hands out is held until its result is recorded (`complete`), or
    /// until its admission turns it away: a revocation waits for both.
    ///
    /// Which partitions it looks at: all of them when `fullScan` has passed since it last did (what comes due with time:
    /// retries, held and waiting sends), else only those a batch brought sends or contacts to since (`hinted`), and those
    /// whose last claim was cut by the limit: a wake-up for one send reads one partition, not every one.
    func claim(_ channel: MessageChannel, limit: Int, fullScan: Duration = .zero) async -> [ClaimedAttempt] {
        let running = await owner.runningPartitions
        let now = clock()
        let scanned: [Int32]
        if let last = lastFullScan[channel], ContinuousClock.now - last < fullScan {
            let hints = hinted.removeValue(forKey: channel) ?? []
            scanned = running.filter { hints.contains($0) }
        } else {
            // Every partition, but only those where an attempt may be due by now (`DueHints`), and those a batch
            // brought work to.
            lastFullScan[channel] = .now
            let hints = hinted.removeValue(forKey: channel) ?? []
            scanned = running.filter { hints.contains($0) || (self.workHints[$0]?.isDue(channel.rawValue, at: now) ?? true) }
        }
        let (owner, origins, logger, workHints) = (self.owner, self.origins, self.logger, self.workHints)
        let (gate, suppressions) = (webhookGate, self.suppressions)
        // The partitions claim at once, each on its own database's writer, each up to an even share of the limit (at
        // least one): with one partition after another, a send whose partition came last in a busy round waited for
        // every other's transaction (docs/performance.md, "Partitions per process"). Beyond the limit's count of
        // partitions, the rest are looked at first next time, as are those whose share cut their claim.
        let ready = scanned.filter { handover[$0] == nil }
        let claiming = Array(ready.prefix(max(1, limit)))
        if claiming.count < ready.count { hinted[channel, default: []].formUnion(ready[claiming.count...]) }
        guard !claiming.isEmpty else { return [] }
        let share = max(1, limit / claiming.count)
        let claims = await withTaskGroup(of: (Int32, [SendClaims.Claimed], Int64?).self) { group in
            for number in claiming {
                group.addTask {
                    do {
                        let claim = try await Self.claim(
                            number, channel, limit: share, now: now, owner: owner, origins: origins, hints: workHints[number],
                            gate: gate, suppressions: suppressions)
                        return (number, claim?.claimed ?? [], claim?.end)
                    } catch {
                        workHints[number]?.invalidate(channel.rawValue)
                        logger.error(
                            "claiming sends failed",
                            metadata: ["partition": "\(number)", "channel": "\(channel)", "error": "\(error)"])
                        return (number, [], nil)
                    }
                }
            }
            var claims: [Int32: (claimed: [SendClaims.Claimed], end: Int64?)] = [:]
            for await (number, claimed, end) in group { claims[number] = (claimed, end) }
            return claims
        }
        var result: [ClaimedAttempt] = []
        for number in claiming {
            guard let (claimed, end) = claims[number], !claimed.isEmpty else { continue }
            // Cut by its share: more may be due there.
            if claimed.count == share { hinted[channel, default: []].insert(number) }
            let admission = end.map { end in
                Task { await self.admission(number, through: end, attempts: claimed.count, channel: channel) }
            }
            result += claimed.map { ClaimedAttempt(partition: number, claimed: $0, admission: admission) }
        }
        return result
    }

    /// One partition's claim: up to `limit` due attempts, held as the partition's work; nil when the partition is not
    /// running here. Let in only while the partition runs, and it claims only if the partition still runs when its
    /// write transaction starts (`isRunning`, read inside it): a revocation, drained or lost, that begins while the
    /// claim reads or waits for the writer leaves the sends pending for the next owner. A check between the read and
    /// the write left the write's own wait open; without any, a lost partition's old owner sent what it had claimed
    /// after the loss, and the new owner sent it again (StateMoveTests).
    private static func claim(
        _ number: Int32, _ channel: MessageChannel, limit: Int, now: Date, owner: PartitionOwner,
        origins: [String: Eligibility.Origin], hints: DueHints?, gate: WebhookGate, suppressions: SuppressionList
    ) async throws -> (claimed: [SendClaims.Claimed], end: Int64?)? {
        try await owner.run(on: number) { database in
            // A read first, unless the hint says an attempt may be due: the claim's transaction then sets the hint.
            if hints?.isDue(channel.rawValue, at: now) != true {
                let due = try await database.read { db in try SendsTable(db).hasWork(channel: channel, at: now) }
                guard due else { return ([], nil) }
            }
            let (claimed, outbox, end) = try await database.writeWithOutboxLogged { db in
                guard owner.isRunning(number) else { return ([SendClaims.Claimed](), [PendingOutput]()) }
                return try Self.claim(db, channel, limit: limit, now: now, origins: origins, hints: hints, gate: gate, suppressions: suppressions)
            }
            // Held before this claim's own work ends: a drain never sees a moment with neither.
            await owner.hold(claimed.count, on: number)
            if !outbox.isEmpty { await owner.scheduleFlush(number) }
            return (claimed, end)
        }
    }

    /// `SendClaims.claim` in the caller's transaction; a claim the limit did not cut took all that was due, and sets the
    /// partition's hint to the earliest attempt left (in the transaction: a row made due meanwhile lowers it after).
    private static func claim(
        _ db: Database, _ channel: MessageChannel, limit: Int, now: Date, origins: [String: Eligibility.Origin], hints: DueHints?,
        gate: WebhookGate, suppressions: SuppressionList
    ) throws -> (claimed: [SendClaims.Claimed], outputs: [PendingOutput]) {
        let claim = try SendClaims.claim(
            db, channel: channel, limit: limit, now: now, origins: origins, gate: gate, suppressions: suppressions)
        if let hints, claim.claimed.count < limit { hints.reset(channel.rawValue, to: try SendsTable(db).nextWork(channel: channel)) }
        return claim
    }

    /// Whether a claim's attempts may be made: once its `sending` rows are in the partition's changelog (through `end`,
    /// its commit record), a next owner restores them as attempts in doubt and waits for their answers (reported late
    /// by this instance) instead of making them again. The attempts of a partition lost before its changelog had the
    /// claim are not made: the next owner may have restored the partition without them and makes them itself
    /// (docs/partitions.md, "Claims in the changelog"); their holds are released here. The worker awaits it in each
    /// attempt's task, so it goes on claiming and completing meanwhile.
    private func admission(_ number: Int32, through end: Int64, attempts: Int, channel: MessageChannel) async -> Bool {
        guard await !owner.changelogHolds(number, through: end) else { return true }
        logger.warning(
            "claimed attempts not made: their partition was lost before its changelog had them; its next owner makes them",
            metadata: ["partition": "\(number)", "channel": "\(channel)", "attempts": "\(attempts)"])
        await owner.release(attempts, on: number)
        return false
    }

    /// Writes attempts' results of one partition and produces their reports. When the partition is gone (a drain that
    /// timed out, a lost partition), the reports of finished targets go straight to the broker instead.
    func complete(partition: Int32, results: [AttemptResults.AttemptResult], retry: RetryPolicy) async {
        if let database = await owner.database(partition) {
            // Now, unless results a failure left wait before these (they are written in order).
            let recorded = unrecorded[partition] == nil ? await record(partition, database, results, retry: retry) : false
            if !recorded { unrecorded[partition, default: []].append((results, retry)) }
        } else {
            await reportLate(partition, results)
        }
        // Recorded (or kept for the next round, or reported): a drain waiting for them may go on.
        await owner.release(results.count, on: partition)
    }

    /// Results of a partition no longer open here: the reports of finished targets go straight to the broker.
    private func reportLate(_ partition: Int32, _ results: [AttemptResults.AttemptResult]) async {
        let reports = AttemptResults.lateReports(results)
        logger.warning(
            "results for a partition not open; reported straight to herald.deliveries",
            metadata: ["partition": "\(partition)", "results": "\(results.count)", "reports": "\(reports.count)"])
        do {
            try await owner.publishDirectly(reports.map(\.outgoing))
        } catch {
            logger.error(
                "late reports not produced; the next owner attempts these targets again",
                metadata: ["partition": "\(partition)", "error": "\(error)"])
        }
    }

    /// Writes results to the ledger with their reports; on failure the partition is paused (its database fails) and
    /// false is returned: the caller keeps the results for the next round.
    private func record(
        _ partition: Int32, _ database: PartitionDatabase, _ results: [AttemptResults.AttemptResult], retry: RetryPolicy
    ) async -> Bool {
        do {
            _ = try await database.writeWithOutbox { db in ((), try AttemptResults.complete(db, results: results, retry: retry)) }
            await owner.scheduleFlush(partition)
            return true
        } catch {
            logger.error(
                "recording results failed; retried every second", metadata: ["partition": "\(partition)", "error": "\(error)"])
            await owner.pause(partition, error: error)
            return false
        }
    }

    /// Writes the results a failure left, in their order; those of a partition no longer open are reported straight to
    /// the broker (`complete`'s late reports).
    private func recordLeftovers(_ partition: Int32) async {
        while let (results, retry) = unrecorded[partition]?.first {
            guard let database = await owner.database(partition) else {
                for (results, _) in unrecorded.removeValue(forKey: partition) ?? [] { await reportLate(partition, results) }
                return
            }
            guard await record(partition, database, results, retry: retry) else { return }
            unrecorded[partition]?.removeFirst()
            if unrecorded[partition]?.isEmpty == true { unrecorded.removeValue(forKey: partition) }
        }
    }

    /// The relay's round: results a failure left, every partition whose outbox a produce left behind, and the paused
    /// partitions due for another try.
    func flushAll() async {
        for partition in unrecorded.keys.sorted() { await recordLeftovers(partition) }
        await owner.flushUnflushed()
        await owner.retryPaused()
    }

    /// The parked messages of a webhook endpoint enabled again are pending in every partition running here, at their
    /// old due times (a claim takes the oldest first); returns how many, and wakes the webhook worker.
    func unpark(endpoint: String) async -> Int {
        var given = 0
        for number in await owner.runningPartitions {
            do {
                given += try await owner.run(on: number) { database in
                    try await database.write { db in try LedgerTable(db).unpark(endpoint: endpoint, at: Date()) }
                } ?? 0
            } catch {
                logger.error("unparking webhook messages failed", metadata: ["partition": "\(number)", "endpoint": "\(endpoint)", "error": "\(error)"])
            }
        }
        if given > 0 {
            lastFullScan.removeValue(forKey: .webhook)
            wake[.webhook]?()
        }
        return given
    }

    /// Every row of the profiles `keys` names, and of those whose contact has `email` or `phone`, in `partitions`, each
    /// running here; nil when one is not (`ProfileRows.export`).
    func export(
        project: String, keys: [String], email: String?, phone: String?, tokens: Bool, in partitions: [Int32]
    ) async throws -> [ProfileExportResponse.Row]? {
        let lookups = Self.contactLookups(project: project, email: email, phone: phone)
        return try await ProfileRows.export(owner, in: partitions, tokens: tokens) { db in
            var found = Set(keys)
            for (sql, arguments) in lookups { found.formUnion(try String.fetchAll(db, sql: sql, arguments: arguments)) }
            return found.sorted()
        }
    }

    /// The queries that find the profiles whose contact has `email` (in any case) or `phone`.
    static func contactLookups(project: String, email: String?, phone: String?) -> [(sql: String, arguments: StatementArguments)] {
        var lookups: [(sql: String, arguments: StatementArguments)] = []
        if let email {
            lookups.append(("SELECT profile_key FROM contacts WHERE project = ? AND lower(email) = lower(?)", [project, email]))
        }
        if let phone {
            lookups.append(("SELECT profile_key FROM contacts WHERE project = ? AND phone_number = ?", [project, phone]))
        }
        return lookups
    }

    /// A ledger row, for operators and tests.
    struct LedgerEntry: Sendable, Equatable {
        var targetID: String
        var state: String
        var attempts: Int
        var reason: String?
    }

    /// A send's ledger rows in the partitions of this instance.
    func ledger(sendID: String) async throws -> [LedgerEntry] {
        for (_, database) in await self.owner.openDatabases {
            let rows = try await database.read { db in
                try LedgerTable(db).rows(sendID: sendID).map {
                    LedgerEntry(targetID: $0.targetID, state: $0.state, attempts: $0.attempts, reason: $0.reason)
                }
            }
            if !rows.isEmpty { return rows }
        }
        return []
    }

    /// Ledger rows of a channel by state (`pending`, `sending`, `sent`, `failed`, `suppressed`), over this instance's
    /// partitions.
    func ledgerStates(_ channel: MessageChannel) async throws -> [String: Int] {
        var counts: [String: Int] = [:]
        for (_, database) in await self.owner.openDatabases {
            let rows = try await database.read { db in try LedgerTable(db).counts(channel: channel) }
            for (state, count) in rows { counts[state, default: 0] += count }
        }
        return counts
    }

    /// Prunes the ledger and the sends of every running partition (finished targets, then sends resolved with no target
    /// left, `chunk` rows per transaction) older than `cutoff`; returns how many rows went (docs/retention.md).
    func purgeSends(before cutoff: Date, chunk: Int = 5_000) async throws -> Int {
        var purged = 0
        for number in await owner.runningPartitions {
            purged += try await owner.run(on: number) { database in
                let targets = try await database.pruneInChunks(chunk: chunk) { db, limit in
                    try LedgerTable(db).pruneFinished(before: cutoff, limit: limit)
                }
                let sends = try await database.pruneInChunks(chunk: chunk) { db, limit in
                    try SendsTable(db).pruneResolved(before: cutoff, limit: limit)
                }
                return targets + sends
            } ?? 0
        }
        return purged
    }

    var openPartitions: [Int32] { get async { await owner.openPartitions } }
}
