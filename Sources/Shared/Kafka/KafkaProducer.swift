import CRdKafka
import Logging
import ServiceLifecycle
import Synchronization

/// An idempotent, `acks=all` producer. `send` returns when the broker acknowledged the record, or throws a
/// `KafkaError` (`queueFull` at once, `brokerUnavailable` after the delivery timeout, …).
///
/// As a `Service` it runs until graceful shutdown, then flushes what is in flight and destroys the handle.
package final class KafkaProducer: Service, Sendable {
    private let runtime: RdKafkaRuntime
    private let deliveries: DeliveryTracker
    private let flushTimeout: Duration
    private let probe: BrokerProbe

    package init(configuration: KafkaProducerConfiguration, logger: Logger, flushTimeout: Duration = .seconds(10))
        throws(KafkaError)
    {
        let deliveries = DeliveryTracker()
        self.deliveries = deliveries
        self.flushTimeout = flushTimeout
        self.runtime = try RdKafkaRuntime(
            type: RD_KAFKA_PRODUCER,
            configuration: configuration.rdKafka,
            events: RD_KAFKA_EVENT_DR,
            logger: logger,
            beforeDestroy: { runtime in
                // Whatever is still queued will not be delivered: fail those sends rather than leave them waiting.
                rd_kafka_purge(runtime.handle, Int32(RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT))
                runtime.serveMainQueue(whileTrue: { deliveries.pendingCount > 0 }, timeoutMs: 2000)
                deliveries.failAll(KafkaError.closed("producer"))
            },
            onEvent: { event, type in
                switch type {
                case RD_KAFKA_EVENT_DR: deliveries.complete(event)
                case RD_KAFKA_EVENT_ERROR where rd_kafka_event_error_is_fatal(event) != 0:
                    deliveries.markFatal(String(cString: rd_kafka_event_error_string(event)))
                default: break
                }
            }
        )
        self.probe = BrokerProbe(runtime: runtime)
    }

    /// Learns where `topics`' partitions are now, one metadata request each. Without it, the first record to a topic
    /// waits for librdkafka's next metadata round for topics it has not seen (about a second, once per topic): seen as
    /// a two-second stall of the orchestrator's first sends and changelog after every start (docs/performance.md).
    /// A topic that does not answer in `timeout` is left to that round.
    package func prepare(topics: [HeraldTopic], timeout: Duration = .seconds(5)) async {
        let names = topics.map(\.name)
        _ = await runtime.blockingCall { handle in
            for topic in names {
                guard let rkt = rd_kafka_topic_new(handle, topic, nil) else { continue }
                var metadata: UnsafePointer<rd_kafka_metadata>?
                _ = rd_kafka_metadata(handle, 0, rkt, &metadata, Int32(timeout.milliseconds))
                if let metadata { rd_kafka_metadata_destroy(metadata) }
                // The partitions the metadata created keep the topic known after the handle goes.
                rd_kafka_topic_destroy(rkt)
            }
        }
    }

    /// Produces one record and waits for the broker's acknowledgement.
    @discardableResult
    package func send(_ record: KafkaOutgoingRecord) async throws -> KafkaDeliveryReport {
        guard let report = try await send([record]).first else {
            throw KafkaError(code: .other, reason: "no delivery report for \(record.topic)")
        }
        return report
    }

    /// Produces `records` together and waits until the broker acknowledged every one, returning their reports in
    /// order; throws the first error once every record has its delivery report, so nothing is still in flight when
    /// it returns. One continuation for the whole batch: cheaper than one task per record.
    package func send(_ records: [KafkaOutgoingRecord]) async throws -> [KafkaDeliveryReport] {
        guard !records.isEmpty else { return [] }
        if let fatal = deliveries.fatalError { throw fatal }
        guard !runtime.isStopping else { throw KafkaError.closed("producer") }
        return try await withCheckedThrowingContinuation { continuation in
            let ids = deliveries.register(batch: records.count, continuation)
            for (record, id) in zip(records, ids) {
                let err = runtime.withHandle { produce(record, handle: $0, opaque: UnsafeMutableRawPointer(bitPattern: id)) }
                if let err, err != RD_KAFKA_RESP_ERR_NO_ERROR {
                    deliveries.fail(id: id, KafkaError(err, context: "produce to \(record.topic)"))
                } else if err == nil {
                    deliveries.fail(id: id, KafkaError.closed("producer"))
                }
            }
        }
    }

    /// `rd_kafka_producev` copies key and value and only enqueues: it does not block.
    private func produce(_ record: KafkaOutgoingRecord, handle: OpaquePointer, opaque: UnsafeMutableRawPointer?)
        -> rd_kafka_resp_err_t
    {
        var headers: OpaquePointer?
        if !record.headers.isEmpty {
            headers = rd_kafka_headers_new(record.headers.count)
            for header in record.headers {
                if let value = header.value {
                    value.withUnsafeBytes { _ = rd_kafka_header_add(headers, header.name, -1, $0.baseAddress, $0.count) }
                } else {
                    _ = rd_kafka_header_add(headers, header.name, -1, nil, 0)
                }
            }
        }
        let partition = record.partition ?? HERALD_PARTITION_UA
        let err = withOptionalBytes(record.key) { key, keyLength in
            withOptionalBytes(record.value) { value, valueLength in
                herald_produce(
                    handle, record.topic, partition, key, keyLength, value, valueLength, headers, opaque)
            }
        }
        if err != RD_KAFKA_RESP_ERR_NO_ERROR, let headers { rd_kafka_headers_destroy(headers) }
        return err
    }

    /// Waits until every record handed to `send` got its delivery report. Returns false on timeout.
    package func flush(timeout: Duration) async -> Bool {
        // With delivery-report events enabled, rd_kafka_flush waits while the runtime thread serves the reports.
        let err = await runtime.blockingCall { rd_kafka_flush($0, Int32(timeout.milliseconds)) }
        return err.map { $0 == RD_KAFKA_RESP_ERR_NO_ERROR } ?? (deliveries.pendingCount == 0)
    }

    /// Flushes, then destroys the handle; sends still waiting fail with `closed`. Idempotent.
    package func shutdown() async {
        if !runtime.isStopping {
            let flushed = await flush(timeout: flushTimeout)
            if !flushed {
                runtime.logger.warning(
                    "producer flush timed out; failing pending sends",
                    metadata: ["pending": .stringConvertible(deliveries.pendingCount)])
            }
        }
        await runtime.stop()
    }

    package func run() async throws {
        try? await gracefulShutdown()
        await shutdown()
    }

    /// Whether a broker answers a metadata request within `timeout` (cached for a second).
    package func brokersReachable(timeout: Duration = .seconds(2)) async -> Bool {
        guard !runtime.isStopping, deliveries.fatalError == nil else { return false }
        return await probe.check(timeout: timeout)
    }

    /// Records handed to `send` that have no delivery report yet.
    package var inFlight: Int { deliveries.pendingCount }
}

/// Maps message opaques (ids) to the slot of the `send` batch that waits for them.
private final class DeliveryTracker: Sendable {
    typealias Many = CheckedContinuation<[KafkaDeliveryReport], any Error>

    /// A batch in flight: its reports so far, the first error, and how many are still missing.
    /// Only touched under the tracker's lock.
    private final class Batch: @unchecked Sendable {
        let continuation: Many
        var reports: [KafkaDeliveryReport?]
        var remaining: Int
        var error: KafkaError?

        init(_ continuation: Many, count: Int) {
            self.continuation = continuation
            self.reports = Array(repeating: nil, count: count)
            self.remaining = count
        }
    }

    private struct Waiter {
        var batch: Batch
        var index: Int
    }

    private struct State {
        var nextID: UInt = 1
        var pending: [UInt: Waiter] = [:]
        var fatal: KafkaError?

        mutating func newID() -> UInt {
            let id = nextID
            nextID &+= 1
            if nextID == 0 { nextID = 1 }
            return id
        }
    }
    private let state = Mutex(State())

    func register(batch count: Int, _ continuation: Many) -> [UInt] {
        let batch = Batch(continuation, count: count)
        return state.withLock { state in
            (0..<count).map { index in
                let id = state.newID()
                state.pending[id] = Waiter(batch: batch, index: index)
                return id
            }
        }
    }

    var pendingCount: Int { state.withLock { $0.pending.count } }
    var fatalError: KafkaError? { state.withLock { $0.fatal } }

    func markFatal(_ reason: String) {
        state.withLock { $0.fatal = KafkaError(code: .fatal, reason: reason) }
    }

    func fail(id: UInt, _ error: KafkaError) {
        let resume = state.withLock { state in Self.settle(&state, id: id, .failure(error)) }
        resume?()
    }

    func failAll(_ error: KafkaError) {
        let resumes = state.withLock { state in
            state.pending.keys.compactMap { Self.settle(&state, id: $0, .failure(error)) }
        }
        for resume in resumes { resume() }
    }

    /// Resumes the sends of one delivery-report event. Runs on the runtime thread.
    func complete(_ event: OpaquePointer) {
        let resumes = state.withLock { state in
            var resumes: [() -> Void] = []
            while let message = rd_kafka_event_message_next(event) {
                let id = UInt(bitPattern: message.pointee._private)
                let topic = String(cString: rd_kafka_topic_name(message.pointee.rkt))
                let result: Result<KafkaDeliveryReport, KafkaError> =
                    message.pointee.err == RD_KAFKA_RESP_ERR_NO_ERROR
                    ? .success(
                        KafkaDeliveryReport(topic: topic, partition: message.pointee.partition, offset: message.pointee.offset))
                    : .failure(KafkaError(message.pointee.err, context: "deliver to \(topic)"))
                if let resume = Self.settle(&state, id: id, result) { resumes.append(resume) }
            }
            return resumes
        }
        for resume in resumes { resume() }
    }

    /// Records one outcome under the lock; returns the resumption to run after the lock is released, if any.
    private static func settle(_ state: inout State, id: UInt, _ result: Result<KafkaDeliveryReport, KafkaError>)
        -> (() -> Void)?
    {
        guard let waiter = state.pending.removeValue(forKey: id) else { return nil }
        let batch = waiter.batch
        switch result {
        case .success(let report): batch.reports[waiter.index] = report
        case .failure(let error): batch.error = batch.error ?? error
        }
        batch.remaining -= 1
        guard batch.remaining == 0 else { return nil }
        if let error = batch.error { return { batch.continuation.resume(throwing: error) } }
        let reports = batch.reports.compactMap { $0 }
        return { batch.continuation.resume(returning: reports) }
    }
}

/// A cached "does any broker answer?" check, shared by producers and consumers for `/health`.
final class BrokerProbe: Sendable {
    private let runtime: RdKafkaRuntime
    private let last = Mutex<(at: ContinuousClock.Instant, ok: Bool)?>(nil)

    init(runtime: RdKafkaRuntime) { self.runtime = runtime }

    func check(timeout: Duration) async -> Bool {
        if let last = last.withLock({ $0 }), ContinuousClock.now - last.at < .seconds(1) { return last.ok }
        let ok =
            await runtime.blockingCall { handle in
                var metadata: UnsafePointer<rd_kafka_metadata>?
                let err = rd_kafka_metadata(handle, 0, nil, &metadata, Int32(timeout.milliseconds))
                if let metadata { rd_kafka_metadata_destroy(metadata) }
                return err == RD_KAFKA_RESP_ERR_NO_ERROR
            } ?? false
        last.withLock { $0 = (ContinuousClock.now, ok) }
        return ok
    }
}

private func withOptionalBytes<T>(_ bytes: [UInt8]?, _ body: (UnsafeRawPointer?, Int) -> T) -> T {
    guard let bytes else { return body(nil, 0) }
    // An empty but present value must stay distinct from a null (tombstone): pass a valid pointer with length 0.
    if bytes.isEmpty { return withUnsafeBytes(of: 0) { body($0.baseAddress, 0) } }
    return bytes.withUnsafeBytes { body($0.baseAddress, $0.count) }
}
