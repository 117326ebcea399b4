import CRdKafka
import Logging
import Synchronization

/// What a stateful caller does when the group moves partitions. Both methods run inside the batch iteration, between
/// two batches: no batch is being processed while they run, and no record of a revoked partition is handed out after
/// `partitionsRevoked` returns. Rebalances are incremental (cooperative): `partitionsAssigned` brings only the
/// partitions added, `partitionsRevoked` names only those taken away; the rest stay assigned throughout.
package protocol KafkaRebalanceListener: Sendable {
    /// The consumer was given `partitions`. Open their state and say where each starts; partitions left out start at
    /// `.committed`. Throwing ends the iteration with that error.
    func partitionsAssigned(_ partitions: [TopicPartition]) async throws -> [TopicPartition: KafkaStartOffset]
    /// `partitions` are taken away: finish with them and close their state. `lost` means the group already gave them to
    /// another member (this one missed its session timeout), so nothing should be committed for them.
    func partitionsRevoked(_ partitions: [TopicPartition], lost: Bool) async
}

/// A listener that starts every partition at its committed offset and keeps no state.
package struct CommittedOffsetsListener: KafkaRebalanceListener {
    package init() {}
    package func partitionsAssigned(_ partitions: [TopicPartition]) async throws -> [TopicPartition: KafkaStartOffset] {
        [:]
    }
    package func partitionsRevoked(_ partitions: [TopicPartition], lost: Bool) async {}
}

/// A listener that starts every partition at its beginning (a reader of a whole compacted topic).
package struct FromBeginningListener: KafkaRebalanceListener {
    package init() {}
    package func partitionsAssigned(_ partitions: [TopicPartition]) async throws -> [TopicPartition: KafkaStartOffset] {
        Dictionary(uniqueKeysWithValues: partitions.map { ($0, KafkaStartOffset.beginning) })
    }
    package func partitionsRevoked(_ partitions: [TopicPartition], lost: Bool) async {}
}

/// A consumer-group member with manual offsets: batches as an `AsyncSequence`, rebalances handed to a listener,
/// pause/resume, commit, and a `close` that hands the partitions back and leaves the group.
///
/// Use: iterate `batches()` in one task; on shutdown call `stop()` (the iteration ends after the batch in hand), then
/// `close()`.
package final class KafkaConsumer: Sendable {
    private let runtime: RdKafkaRuntime
    private let listener: any KafkaRebalanceListener
    private let maxBatchSize: Int
    private let closeTimeout: Duration
    private let probe: BrokerProbe
    /// With `coPartitioned`, every topic read for each partition number of the group's (first) topic.
    private let coPartitionedTopics: [String]?
    /// Where processed offsets are copied for operators (a group without members).
    private let reporter: KafkaOffsetReporter?
    private let state = Mutex(State())
    private var logger: Logger { runtime.logger }

    private struct State {
        var assignment: Set<TopicPartition> = []
        var joined = false
        /// An assignment event has come, so librdkafka has its assignor's state (confluentinc/librdkafka#4312).
        var assignmentReceived = false
        var pending: [RawEvent] = []
        var stopRequested = false
        var iterating = false
        var closing = false
        var iterationEndWaiters: [CheckedContinuation<Void, Never>] = []
        var fatal: KafkaError?
    }

    package init(
        configuration: KafkaConsumerConfiguration,
        listener: any KafkaRebalanceListener = CommittedOffsetsListener(),
        logger: Logger
    ) throws(KafkaError) {
        guard !configuration.topics.isEmpty else {
            throw KafkaError(code: .configuration, reason: "a consumer needs at least one topic")
        }
        self.listener = listener
        self.maxBatchSize = max(configuration.maxBatchSize, 1)
        self.closeTimeout = configuration.sessionTimeout * 3
        self.coPartitionedTopics = configuration.coPartitioned ? configuration.topics : nil
        let reporter = try configuration.progressGroup.map { group throws(KafkaError) in
            try KafkaOffsetReporter(client: configuration.client, clientID: configuration.clientID, groupID: group, logger: logger)
        }
        self.reporter = reporter
        let subscribed = configuration.coPartitioned ? [configuration.topics[0]] : configuration.topics
        let runtime: RdKafkaRuntime
        do {
            runtime = try RdKafkaRuntime(
                type: RD_KAFKA_CONSUMER,
                configuration: configuration.rdKafka,
                events: RD_KAFKA_EVENT_FETCH | RD_KAFKA_EVENT_REBALANCE,
                logger: logger,
                extraQueues: { [rd_kafka_queue_get_consumer($0)] },
                // close() leaves the group itself; destroying must not try again without anyone serving the queue.
                destroyFlags: Int32(RD_KAFKA_DESTROY_F_NO_CONSUMER_CLOSE),
                onEvent: { _, _ in }
            )
        } catch {
            if let reporter { Task { await reporter.shutdown() } }
            throw error
        }
        self.runtime = runtime
        self.probe = BrokerProbe(runtime: runtime)
        let err = withPartitionList(subscribed.map { (TopicPartition($0, HERALD_PARTITION_UA), 0) }) {
            rd_kafka_subscribe(runtime.handle, $0)
        }
        if err != RD_KAFKA_RESP_ERR_NO_ERROR {
            let error = KafkaError(err, context: "subscribe to \(subscribed.joined(separator: ","))")
            Task { [runtime] in
                await runtime.stop()
                await reporter?.shutdown()
            }
            throw error
        }
    }

    /// The consumer's batches. Only one iteration may run at a time.
    package func batches() -> KafkaBatches { KafkaBatches(consumer: self) }

    /// The partitions currently assigned to this member.
    package var assignment: Set<TopicPartition> { state.withLock { $0.assignment } }

    /// Whether this member has received an assignment from its group and opened it (possibly empty: a member of a
    /// group with more members than partitions is given nothing, and is still in the group).
    package var hasJoinedGroup: Bool { state.withLock { $0.joined } }

    /// Ends the iteration after the batch in hand (safe to call from a graceful-shutdown handler).
    package func stop() {
        state.withLock { $0.stopRequested = true }
        runtime.wake()
    }

    /// Commits `offsets` (each the next offset to read) to the group in Kafka.
    package func commit(_ offsets: [TopicPartition: Int64]) async throws {
        let entries = offsets.map { ($0.key, $0.value) }
        try await runtime.perform { [runtime] in
            let err = withPartitionList(entries) { rd_kafka_commit(runtime.handle, $0, 0) }
            if err != RD_KAFKA_RESP_ERR_NO_ERROR { throw KafkaError(err, context: "commit offsets") }
        }
    }

    /// Copies, without waiting, the offsets after a batch the service has applied (`KafkaBatch.nextOffsets`) to the
    /// progress group, if the configuration names one. The services keep their offsets in their own databases (the
    /// truth for where they resume); this copy is for operators: `herald lag`, kafka-consumer-groups and kcat show how
    /// far behind each partition is. Never committed through the member: see `KafkaOffsetReporter`.
    package func commitProcessed(_ next: [TopicPartition: Int64]) {
        reporter?.commit(next)
    }

    /// Records left behind each partition at these positions, from the end offsets the last fetches brought (no
    /// request to the broker).
    package func lag(at positions: [TopicPartition: Int64]) -> [TopicPartition: Int64] {
        var lag: [TopicPartition: Int64] = [:]
        _ = runtime.withHandle { handle in
            for (tp, position) in positions {
                var low: Int64 = 0
                var high: Int64 = 0
                if rd_kafka_get_watermark_offsets(handle, tp.topic, tp.partition, &low, &high) == RD_KAFKA_RESP_ERR_NO_ERROR, high >= 0 {
                    lag[tp] = max(0, high - position)
                }
            }
        }
        return lag
    }

    /// The offsets the group committed in Kafka for `partitions` (absent: none committed).
    package func committed(_ partitions: [TopicPartition], timeout: Duration = .seconds(5)) async throws
        -> [TopicPartition: Int64]
    {
        try await OffsetQueries.committed(runtime, partitions, timeout: timeout)
    }

    /// The partition's first offset still held and its end offset (the offset the next record will get), asked of the
    /// broker.
    package func watermarks(_ partition: TopicPartition, timeout: Duration = .seconds(5)) async throws -> (low: Int64, high: Int64) {
        let marks = try await OffsetQueries.watermarks(runtime, partition, timeout: timeout)
        return (marks.low, marks.high)
    }

    /// The partition's end offset (the offset the next record will get), asked of the broker.
    package func endOffset(_ partition: TopicPartition, timeout: Duration = .seconds(5)) async throws -> Int64 {
        try await OffsetQueries.watermarks(runtime, partition, timeout: timeout).high
    }

    /// Stops fetching `partitions` until `resume` (the assignment stays).
    package func pause(_ partitions: [TopicPartition]) async throws {
        try await pauseResume(partitions, pause: true)
    }

    package func resume(_ partitions: [TopicPartition]) async throws {
        try await pauseResume(partitions, pause: false)
    }

    /// Resumes paused partitions, each from the given offset (where its stored state ends), so that records fetched
    /// before the pause and not applied are read again: the records of these partitions fetched and not handed out
    /// yet are dropped (librdkafka drops its own at the seek). Call it from `betweenBatches`, so that no batch fetched
    /// before is being handled meanwhile.
    package func resume(_ partitions: [TopicPartition], at offsets: [TopicPartition: KafkaStartOffset]) async throws {
        let resumed = Set(partitions)
        state.withLock { state in
            state.pending = state.pending.compactMap { event in
                guard case .records(let records) = event else { return event }
                let kept = records.filter { !resumed.contains($0.topicPartition) }
                return kept.isEmpty ? nil : .records(kept)
            }
        }
        for partition in partitions {
            try await seek(partition, to: offsets[partition] ?? .beginning)
        }
        try await resume(partitions)
    }

    /// Runs `action` in the iteration, between two batches (never while a batch or a rebalance is being handled), as
    /// soon as the batch in hand is done: for a listener that resumes a partition it paused, so that nothing fetched
    /// before the resume is handled after it.
    package func betweenBatches(_ action: @escaping @Sendable () async -> Void) {
        state.withLock { $0.pending.append(.action(action)) }
        runtime.wake()
    }

    private func pauseResume(_ partitions: [TopicPartition], pause: Bool) async throws {
        let entries = partitions.map { ($0, HERALD_OFFSET_INVALID) }
        try await runtime.perform { [runtime] in
            let err = withPartitionList(entries) {
                pause ? rd_kafka_pause_partitions(runtime.handle, $0) : rd_kafka_resume_partitions(runtime.handle, $0)
            }
            if err != RD_KAFKA_RESP_ERR_NO_ERROR { throw KafkaError(err, context: pause ? "pause" : "resume") }
        }
    }

    /// Moves an assigned partition's position; the next batches continue from `offset`. librdkafka waits (up to 5 s) for
    /// the partition's fetcher to take the seek; on a busy machine that wait can run out while the seek is still queued
    /// (it was seen in a full test run). A seek to the same offset is harmless to repeat, and the caller must not go on
    /// from the old position, so a timed-out seek is tried again, up to `seekAttempts` times.
    package func seek(_ partition: TopicPartition, to offset: KafkaStartOffset) async throws {
        for attempt in 1...Self.seekAttempts {
            do {
                return try await seekOnce(partition, to: offset)
            } catch let error as KafkaError where error.code == .timedOut && attempt < Self.seekAttempts {
                logger.warning("seek timed out; trying again", metadata: ["partition": "\(partition)", "attempt": "\(attempt)"])
            }
        }
    }

    static let seekAttempts = 6

    private func seekOnce(_ partition: TopicPartition, to offset: KafkaStartOffset) async throws {
        let entries = [(partition, offset.rawOffset)]
        try await runtime.perform { [runtime] in
            try withPartitionList(entries) { list in
                if let error = rd_kafka_seek_partitions(runtime.handle, list, 5000) {
                    defer { rd_kafka_error_destroy(error) }
                    throw KafkaError(rd_kafka_error_code(error), context: "seek \(partition)")
                }
                if let (_, _) = list.pointee.entries.first, list.pointee.elems[0].err != RD_KAFKA_RESP_ERR_NO_ERROR {
                    throw KafkaError(list.pointee.elems[0].err, context: "seek \(partition)")
                }
            }
        }
    }

    /// Whether a broker answers a metadata request (cached for a second).
    package func brokersReachable(timeout: Duration = .seconds(2)) async -> Bool {
        await probe.check(timeout: timeout)
    }

    /// Ends the iteration (after the batch in hand), hands the partitions back through the listener, leaves the group,
    /// and destroys the handle. Idempotent.
    package func close() async {
        let first = state.withLock { state -> Bool in
            defer { state.closing = true }
            return !state.closing
        }
        guard first else { return await runtime.stop() }
        stop()
        await waitForIterationEnd()
        do {
            try await runtime.perform { [runtime] in
                if let error = rd_kafka_consumer_close_queue(runtime.handle, runtime.wakeQueues[0]) {
                    defer { rd_kafka_error_destroy(error) }
                    throw KafkaError(rd_kafka_error_code(error), context: "leave group")
                }
            }
            let deadline = ContinuousClock.now + closeTimeout
            while ContinuousClock.now < deadline {
                let (events, closed) = try await runtime.perform { [runtime, maxBatchSize] in
                    (
                        Self.drain(runtime: runtime, timeoutMs: 100, maxRecords: maxBatchSize),
                        rd_kafka_consumer_closed(runtime.handle) != 0
                    )
                }
                for event in events {
                    switch event {
                    case .revoke(let partitions, let lost): await handleRevoke(partitions, lost: lost)
                    case .assign(let partitions): await acknowledgeWhileClosing(partitions)
                    case .rebalanceFailed: await handleRevoke(Array(assignment), lost: false)
                    case .records, .error, .action: break  // not handed out, not committed: the next owner reads them
                    }
                }
                if closed && events.isEmpty { break }
            }
        } catch {
            logger.warning("consumer did not leave the group cleanly", metadata: ["error": "\(error)"])
        }
        keepHandleIfDestroyWouldAbort()
        await runtime.stop()
        await reporter?.shutdown()
        logger.info("consumer closed")
    }

    /// librdkafka before 2.3.0 aborts when a cooperative-sticky consumer that joined its group but never received an
    /// assignment is destroyed (confluentinc/librdkafka#4312: a notifier stopping while the broker went away died of
    /// SIGABRT). Such a handle, already closed, is left to the process's exit instead (`KafkaTests/closeBeforeAssignment`).
    private func keepHandleIfDestroyWouldAbort() {
        guard LibRdKafka.destroyBeforeAssignmentAborts, !state.withLock({ $0.assignmentReceived }) else { return }
        logger.warning(
            "consumer closed before its first assignment: its handle is not destroyed (librdkafka#4312)",
            metadata: ["librdkafka": .string(LibRdKafka.version)])
        runtime.keepHandleAtStop()
    }

    // MARK: Iteration

    fileprivate func beginIteration() -> Bool {
        state.withLock { state in
            guard !state.iterating else { return false }
            state.iterating = true
            return true
        }
    }

    fileprivate func endIteration() {
        let waiters = state.withLock { state in
            state.iterating = false
            defer { state.iterationEndWaiters.removeAll() }
            return state.iterationEndWaiters
        }
        for waiter in waiters { waiter.resume() }
    }

    private func waitForIterationEnd() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let running = state.withLock { state -> Bool in
                if state.iterating { state.iterationEndWaiters.append(continuation) }
                return state.iterating
            }
            if !running { continuation.resume() }
        }
    }

    fileprivate func nextBatch() async throws -> KafkaBatch? {
        while true {
            let (event, stopping, fatal) = state.withLock { state in
                (state.pending.isEmpty ? nil : state.pending.removeFirst(), state.stopRequested, state.fatal)
            }
            if let fatal { throw fatal }
            if stopping || Task.isCancelled { return nil }
            guard let event else {
                let events = try await runtime.perform { [runtime, maxBatchSize] in
                    Self.drain(runtime: runtime, timeoutMs: 100, maxRecords: maxBatchSize)
                }
                state.withLock { $0.pending.append(contentsOf: events) }
                continue
            }
            switch event {
            case .records(let records):
                return KafkaBatch(records: records)
            case .action(let action):
                await action()
            case .assign(let partitions):
                try await handleAssign(partitions)
            case .revoke(let partitions, let lost):
                await handleRevoke(partitions, lost: lost)
            case .rebalanceFailed(let reason):
                logger.warning("rebalance failed; giving up the assignment", metadata: ["reason": .string(reason)])
                await handleRevoke(Array(assignment), lost: true)
            case .error(let error, let fatal):
                if fatal { state.withLock { $0.fatal = error } }
            }
        }
    }

    /// The partitions to read for a rebalance's: with co-partitioning, every topic at each partition number.
    private func expand(_ partitions: [TopicPartition]) -> [TopicPartition] {
        guard let topics = coPartitionedTopics else { return partitions }
        return Set(partitions.map(\.partition)).sorted().flatMap { number in topics.map { TopicPartition($0, number) } }
    }

    private func handleAssign(_ partitions: [TopicPartition]) async throws {
        state.withLock { $0.assignmentReceived = true }
        let added = expand(partitions)
        let starts = try await listener.partitionsAssigned(added)
        let entries = added.map { ($0, (starts[$0] ?? .committed).rawOffset) }
        try await runtime.perform { [runtime] in try Self.changeAssignment(runtime.handle, adding: true, entries) }
        let held = added.filter { starts[$0] == .held }
        if !held.isEmpty { try await pause(held) }
        // A partition paused while it was assigned before (its database failed) and given back now is read: the pause
        // is the listener's decision for this assignment, not one left over from an earlier one.
        let read = added.filter { starts[$0] != .held }
        if !read.isEmpty { try await resume(read) }
        state.withLock { state in
            state.assignment.formUnion(added)
            state.joined = true
        }
        // A cooperative rebalance that gives this member nothing new still asks for the (empty) assignment call.
        guard !added.isEmpty else { return }
        logger.info(
            "partitions assigned", metadata: ["partitions": .string(added.sorted().map(\.description).joined(separator: ","))])
    }

    /// An assignment that comes while the consumer closes: accepted without opening anything (the group's protocol
    /// needs the answer), and revoked by the close that follows.
    private func acknowledgeWhileClosing(_ partitions: [TopicPartition]) async {
        state.withLock { $0.assignmentReceived = true }
        let added = expand(partitions)
        do {
            try await runtime.perform { [runtime] in
                try Self.changeAssignment(runtime.handle, adding: true, added.map { ($0, HERALD_OFFSET_INVALID) })
            }
            state.withLock { $0.assignment.formUnion(added) }
        } catch {
            logger.warning("assignment during close not acknowledged", metadata: ["error": "\(error)"])
        }
    }

    private func handleRevoke(_ partitions: [TopicPartition], lost: Bool) async {
        let taken = expand(partitions)
        await listener.partitionsRevoked(taken, lost: lost)
        do {
            try await runtime.perform { [runtime] in
                try Self.changeAssignment(runtime.handle, adding: false, taken.map { ($0, HERALD_OFFSET_INVALID) })
            }
        } catch {
            logger.warning("unassign failed", metadata: ["error": "\(error)"])
        }
        state.withLock { $0.assignment.subtract(taken) }
        logger.info(
            "partitions revoked",
            metadata: [
                "partitions": .string(taken.sorted().map(\.description).joined(separator: ",")),
                "lost": .stringConvertible(lost),
            ])
    }

    /// Applies a rebalance's change: incrementally under the cooperative protocol, else (eager: a revocation takes
    /// everything) as a whole new assignment.
    private static func changeAssignment(_ handle: OpaquePointer, adding: Bool, _ entries: [(TopicPartition, Int64)]) throws {
        // NULL once the consumer is closing (a rebalance callback during its close): not cooperative then.
        let cooperative = rd_kafka_rebalance_protocol(handle).map { String(cString: $0) } == "COOPERATIVE"
        if cooperative {
            try withPartitionList(entries) { list in
                let error = adding ? rd_kafka_incremental_assign(handle, list) : rd_kafka_incremental_unassign(handle, list)
                if let error {
                    defer { rd_kafka_error_destroy(error) }
                    throw KafkaError(rd_kafka_error_code(error), context: adding ? "incremental assign" : "incremental unassign")
                }
            }
        } else {
            let err = adding ? withPartitionList(entries) { rd_kafka_assign(handle, $0) } : rd_kafka_assign(handle, nil)
            if err != RD_KAFKA_RESP_ERR_NO_ERROR { throw KafkaError(err, context: adding ? "assign" : "unassign") }
        }
    }

    // MARK: Polling (runs on the runtime thread)

    fileprivate enum RawEvent: Sendable {
        case records([KafkaRecord])
        case assign([TopicPartition])
        case revoke([TopicPartition], lost: Bool)
        case rebalanceFailed(String)
        case error(KafkaError, fatal: Bool)
        /// Work to run between two batches (`betweenBatches`).
        case action(@Sendable () async -> Void)
    }

    /// Polls the consumer queue: waits up to `timeoutMs` for the first event, then takes what is ready, up to
    /// `maxRecords` records, stopping after a rebalance so that it is handled before anything that follows it.
    private static func drain(runtime: RdKafkaRuntime, timeoutMs: Int32, maxRecords: Int) -> [RawEvent] {
        let queue = runtime.wakeQueues[0]
        var events: [RawEvent] = []
        var records: [KafkaRecord] = []
        // The submission that runs this drain yielded the queue (`RdKafkaRuntime.wake`, which is there to interrupt a
        // drain already blocked when another command comes). A first poll without waiting consumes that stale yield;
        // without it every drain returned at once and an idle consumer spun at most of a core.
        var first = rd_kafka_queue_poll(queue, 0)
        if first == nil { first = rd_kafka_queue_poll(queue, timeoutMs) }
        polling: while records.count < maxRecords, let event = first ?? rd_kafka_queue_poll(queue, 0) {
            first = nil
            defer { rd_kafka_event_destroy(event) }
            switch rd_kafka_event_type(event) {
            case RD_KAFKA_EVENT_FETCH:
                while let message = rd_kafka_event_message_next(event) {
                    if message.pointee.err == RD_KAFKA_RESP_ERR_NO_ERROR {
                        records.append(KafkaRecord(message))
                    } else {
                        let error = KafkaError(message.pointee.err, context: "fetch")
                        runtime.logger.warning("consumer error", metadata: ["error": "\(error)"])
                        events.append(.error(error, fatal: false))
                    }
                }
            case RD_KAFKA_EVENT_REBALANCE:
                if !records.isEmpty {
                    events.append(.records(records))
                    records = []
                }
                let err = rd_kafka_event_error(event)
                let partitions = rd_kafka_event_topic_partition_list(event).map { $0.pointee.entries.map(\.0) } ?? []
                switch err {
                case RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS:
                    events.append(.assign(partitions))
                case RD_KAFKA_RESP_ERR__REVOKE_PARTITIONS:
                    events.append(.revoke(partitions, lost: rd_kafka_assignment_lost(runtime.handle) != 0))
                default:
                    events.append(.rebalanceFailed(String(cString: rd_kafka_err2str(err))))
                }
                break polling
            case RD_KAFKA_EVENT_ERROR:
                let fatal = rd_kafka_event_error_is_fatal(event) != 0
                let error = KafkaError(
                    rd_kafka_event_error(event), context: String(cString: rd_kafka_event_error_string(event)))
                runtime.logger.log(level: fatal ? .critical : .warning, "consumer error", metadata: ["error": "\(error)"])
                events.append(.error(fatal ? KafkaError(code: .fatal, reason: error.reason) : error, fatal: fatal))
            case RD_KAFKA_EVENT_LOG:
                runtime.dispatch(event)
            default:
                break
            }
        }
        if !records.isEmpty { events.append(.records(records)) }
        return events
    }
}

/// The batches of a consumer. Ends (returns nil) after `stop()`, `close()` or task cancellation.
package struct KafkaBatches: AsyncSequence, Sendable {
    package typealias Element = KafkaBatch
    let consumer: KafkaConsumer

    package func makeAsyncIterator() -> Iterator { Iterator(token: IterationToken(consumer: consumer)) }

    package struct Iterator: AsyncIteratorProtocol, Sendable {
        let token: IterationToken

        package mutating func next() async throws -> KafkaBatch? {
            guard token.active else {
                if token.refused {
                    throw KafkaError(code: .configuration, reason: "the consumer is already being iterated")
                }
                return nil
            }
            do {
                let batch = try await token.consumer.nextBatch()
                if batch == nil { token.finish() }
                return batch
            } catch {
                token.finish()
                throw error
            }
        }
    }
}

/// Marks one running iteration; ends it when finished or dropped.
final class IterationToken: Sendable {
    let consumer: KafkaConsumer
    let refused: Bool
    private let finished: Mutex<Bool>

    fileprivate init(consumer: KafkaConsumer) {
        self.consumer = consumer
        let began = consumer.beginIteration()
        self.refused = !began
        self.finished = Mutex(!began)
    }

    var active: Bool { !finished.withLock { $0 } }

    func finish() {
        let wasActive = finished.withLock { finished in
            defer { finished = true }
            return !finished
        }
        if wasActive { consumer.endIteration() }
    }

    deinit { finish() }
}

extension KafkaStartOffset {
    var rawOffset: Int64 {
        switch self {
        case .committed, .held: HERALD_OFFSET_INVALID
        case .offset(let offset): offset
        case .beginning: HERALD_OFFSET_BEGINNING
        case .end: HERALD_OFFSET_END
        }
    }
}

extension KafkaRecord {
    /// Copies a consumed librdkafka message into Swift values.
    init(_ message: UnsafePointer<rd_kafka_message_t>) {
        let m = message.pointee
        var headers: [KafkaHeader] = []
        var handle: OpaquePointer?
        if rd_kafka_message_headers(message, &handle) == RD_KAFKA_RESP_ERR_NO_ERROR, let handle {
            var index = 0
            var name: UnsafePointer<CChar>?
            var value: UnsafeRawPointer?
            var size = 0
            while rd_kafka_header_get_all(handle, index, &name, &value, &size) == RD_KAFKA_RESP_ERR_NO_ERROR {
                let bytes = value.map { Array(UnsafeRawBufferPointer(start: $0, count: size)) }
                headers.append(KafkaHeader(name.map { String(cString: $0) } ?? "", bytes))
                index += 1
            }
        }
        var timestampType = RD_KAFKA_TIMESTAMP_NOT_AVAILABLE
        let timestamp = rd_kafka_message_timestamp(message, &timestampType)
        self.init(
            topic: String(cString: rd_kafka_topic_name(m.rkt)),
            partition: m.partition,
            offset: m.offset,
            key: m.key.map { Array(UnsafeRawBufferPointer(start: $0, count: m.key_len)) },
            value: m.payload.map { Array(UnsafeRawBufferPointer(start: $0, count: m.len)) },
            headers: headers,
            timestampMs: timestampType == RD_KAFKA_TIMESTAMP_NOT_AVAILABLE ? nil : timestamp
        )
    }
}
