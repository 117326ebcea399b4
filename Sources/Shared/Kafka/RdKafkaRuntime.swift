import CRdKafka
import Dispatch
import Foundation
import Logging
import Synchronization

/// librdkafka configuration as an ordered list of key/value pairs, applied one by one so that a refused key is named.
package struct RdKafkaConfiguration: Sendable {
    package private(set) var entries: [(key: String, value: String)] = []

    package init(_ entries: [(String, String)] = []) {
        for (key, value) in entries { set(key, value) }
    }

    /// Sets or replaces a key.
    package mutating func set(_ key: String, _ value: String) {
        if let index = entries.firstIndex(where: { $0.key == key }) {
            entries[index].value = value
        } else {
            entries.append((key, value))
        }
    }

    package subscript(key: String) -> String? {
        entries.first(where: { $0.key == key })?.value
    }

    /// Builds an `rd_kafka_conf_t`, or throws naming the first key librdkafka refused.
    func makeConf() throws(KafkaError) -> OpaquePointer {
        guard let conf = rd_kafka_conf_new() else {
            throw KafkaError(code: .configuration, reason: "rd_kafka_conf_new failed")
        }
        var errstr = [CChar](repeating: 0, count: 512)
        for (key, value) in entries {
            let result = rd_kafka_conf_set(conf, key, value, &errstr, errstr.count)
            if result != RD_KAFKA_CONF_OK {
                rd_kafka_conf_destroy(conf)
                let text = errstr.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
                throw KafkaError(code: .configuration, reason: "\(key)=\(value): \(text)")
            }
        }
        return conf
    }
}

/// Blocking C calls that must not run on Swift's cooperative pool (flush, metadata) run here.
package enum BlockingCalls {
    private static let queue = DispatchQueue(label: "herald.kafka.blocking", attributes: .concurrent)

    package static func run<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { continuation in
            queue.async { continuation.resume(returning: body()) }
        }
    }
}

/// One librdkafka handle and the one thread that polls it.
///
/// Everything librdkafka reports (delivery reports, logs, errors) arrives as events on the handle's main queue; the
/// thread serves that queue and hands each event to the owner's handler. Owners run short C calls on the thread with
/// `perform`, which wakes a blocked poll at once (`rd_kafka_queue_yield`), so async callers never block the
/// cooperative pool.
final class RdKafkaRuntime: @unchecked Sendable {
    typealias EventHandler = @Sendable (_ event: OpaquePointer, _ type: rd_kafka_event_type_t) -> Void

    /// The `rd_kafka_t*`. Valid until `stop()` returns.
    let handle: OpaquePointer
    let name: String
    let logger: Logger
    private let mainQueue: OpaquePointer
    /// Extra queues a command may block on (the consumer queue); woken too when a command arrives.
    let wakeQueues: [OpaquePointer]
    private let onEvent: EventHandler
    private let beforeDestroy: @Sendable (RdKafkaRuntime) -> Void
    private let destroyFlags: Int32
    private let state = Mutex(State())

    private struct State {
        var commands: [@Sendable () -> Void] = []
        var stopRequested = false
        var stopped = false
        var stopWaiters: [CheckedContinuation<Void, Never>] = []
        /// C calls running on other threads (produce, flush, metadata); the handle is destroyed only when none is left.
        var leases = 0
        /// Set under the lock before the queues and handle are freed: nobody touches them after that.
        var destroying = false
        /// The handle is left to the process's exit instead of destroyed (`keepHandleAtStop`).
        var keepHandle = false
    }

    /// Creates the handle. `events` is the `rd_kafka_conf_set_events` mask; logs always go through `logger`.
    init(
        type: rd_kafka_type_t,
        configuration: RdKafkaConfiguration,
        events: Int32,
        logger: Logger,
        extraQueues: (OpaquePointer) -> [OpaquePointer] = { _ in [] },
        destroyFlags: Int32 = 0,
        beforeDestroy: @escaping @Sendable (RdKafkaRuntime) -> Void = { _ in },
        onEvent: @escaping EventHandler
    ) throws(KafkaError) {
        var configuration = configuration
        configuration.set("log.queue", "true")
        let conf = try configuration.makeConf()
        rd_kafka_conf_set_events(conf, events | RD_KAFKA_EVENT_LOG | RD_KAFKA_EVENT_ERROR)
        var errstr = [CChar](repeating: 0, count: 512)
        guard let rk = rd_kafka_new(type, conf, &errstr, errstr.count) else {
            rd_kafka_conf_destroy(conf)
            let text = errstr.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
            throw KafkaError(code: .configuration, reason: text)
        }
        // Logs on the main queue, which this runtime serves: librdkafka never writes to stderr itself.
        rd_kafka_set_log_queue(rk, nil)
        self.handle = rk
        self.name = String(cString: rd_kafka_name(rk))
        var logger = logger
        logger[metadataKey: "kafka.client"] = .string(name)
        self.logger = logger
        self.mainQueue = rd_kafka_queue_get_main(rk)
        self.wakeQueues = extraQueues(rk)
        self.onEvent = onEvent
        self.destroyFlags = destroyFlags
        self.beforeDestroy = beforeDestroy
        let thread = Thread { [self] in self.loop() }
        thread.name = "rdkafka-\(name)"
        thread.start()
    }

    /// Runs `body` on the runtime thread and returns its result. Throws `KafkaError.closed` once stopping.
    func perform<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
            let accepted = submit { continuation.resume(with: Result { try body() }) }
            if !accepted { continuation.resume(throwing: KafkaError.closed(name)) }
        }
    }

    /// Runs a short, non-blocking C call on the caller's thread (produce), or returns nil once stopping. The handle
    /// stays valid until the call returned.
    func withHandle<T>(_ body: (OpaquePointer) throws -> T) rethrows -> T? {
        guard lease() else { return nil }
        defer { release() }
        return try body(handle)
    }

    /// Runs a blocking C call (flush, metadata) off both the cooperative pool and the runtime thread, which keeps
    /// serving events meanwhile. Returns nil once stopping.
    func blockingCall<T: Sendable>(_ body: @escaping @Sendable (OpaquePointer) -> T) async -> T? {
        guard lease() else { return nil }
        let result = await BlockingCalls.run { [self] in body(self.handle) }
        release()
        return result
    }

    private func lease() -> Bool {
        state.withLock { state in
            guard !state.stopRequested else { return false }
            state.leases += 1
            return true
        }
    }

    private func release() { state.withLock { $0.leases -= 1 } }

    /// Serves main-queue events for up to `timeoutMs`, while `condition` holds. For owners' shutdown hooks, which run on
    /// the runtime thread.
    func serveMainQueue(whileTrue condition: () -> Bool, timeoutMs: Int) {
        let deadline = ContinuousClock.now.advanced(by: .milliseconds(timeoutMs))
        while condition(), ContinuousClock.now < deadline {
            if let event = rd_kafka_queue_poll(mainQueue, 100) {
                dispatch(event)
                rd_kafka_event_destroy(event)
            }
        }
    }

    /// Stops the thread and destroys the handle. Idempotent; returns when the handle is gone.
    func stop() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let stopped = state.withLock { state -> Bool in
                if state.stopped { return true }
                state.stopRequested = true
                state.stopWaiters.append(continuation)
                return false
            }
            if stopped { continuation.resume() } else { wake() }
        }
    }

    /// Makes `stop()` leave the handle undestroyed, for a handle whose destruction would abort the process (a consumer
    /// of a librdkafka with #4312 that never received an assignment: `LibRdKafka.destroyBeforeAssignmentAborts`).
    func keepHandleAtStop() { state.withLock { $0.keepHandle = true } }

    /// Wakes the runtime thread's poll (and a command blocked on an extra queue). Safe at any time.
    func wake() {
        state.withLock { state in
            // Under the lock, so the queues cannot be freed while yielding them.
            guard !state.destroying else { return }
            rd_kafka_queue_yield(mainQueue)
            for queue in wakeQueues { rd_kafka_queue_yield(queue) }
        }
    }

    var isStopping: Bool { state.withLock { $0.stopRequested || $0.stopped } }

    private func submit(_ command: @escaping @Sendable () -> Void) -> Bool {
        let accepted = state.withLock { state -> Bool in
            guard !state.stopRequested else { return false }
            state.commands.append(command)
            return true
        }
        if accepted { wake() }
        return accepted
    }

    private func loop() {
        while true {
            let (commands, stop) = state.withLock { state in
                let commands = state.commands
                state.commands.removeAll()
                return (commands, state.stopRequested)
            }
            for command in commands { command() }
            if stop && commands.isEmpty { break }
            if let event = rd_kafka_queue_poll(mainQueue, commands.isEmpty ? 250 : 0) {
                dispatch(event)
                rd_kafka_event_destroy(event)
            }
        }
        // A flush in progress needs its delivery reports served; destroy only after every lease is returned. No new
        // lease is granted once stopping.
        serveMainQueue(whileTrue: { state.withLock { $0.leases > 0 } }, timeoutMs: 60_000)
        beforeDestroy(self)
        state.withLock { $0.destroying = true }
        for queue in wakeQueues { rd_kafka_queue_destroy(queue) }
        rd_kafka_queue_destroy(mainQueue)
        if state.withLock({ $0.keepHandle }) {
            // Left to the process's exit (`keepHandleAtStop`): its threads stay until then, idle once closed.
        } else if destroyFlags != 0 {
            rd_kafka_destroy_flags(handle, destroyFlags)
        } else {
            rd_kafka_destroy(handle)
        }
        let waiters = state.withLock { state in
            state.stopped = true
            let waiters = state.stopWaiters
            state.stopWaiters.removeAll()
            return waiters
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Routes one event: logs and errors to swift-log, everything (errors included) to the owner.
    func dispatch(_ event: OpaquePointer) {
        let type = rd_kafka_event_type(event)
        switch type {
        case RD_KAFKA_EVENT_LOG:
            logEvent(event)
        case RD_KAFKA_EVENT_ERROR:
            let err = rd_kafka_event_error(event)
            let text = String(cString: rd_kafka_event_error_string(event))
            let fatal = rd_kafka_event_error_is_fatal(event) != 0
            logger.log(
                level: fatal ? .critical : .warning,
                "librdkafka error",
                metadata: [
                    "kafka.error": .string(String(cString: rd_kafka_err2name(err))),
                    "kafka.reason": .string(text),
                    "kafka.fatal": .stringConvertible(fatal),
                ]
            )
            onEvent(event, type)
        default:
            onEvent(event, type)
        }
    }

    private func logEvent(_ event: OpaquePointer) {
        var facility: UnsafePointer<CChar>?
        var text: UnsafePointer<CChar>?
        var level: Int32 = 6
        guard rd_kafka_event_log(event, &facility, &text, &level) == 0 else { return }
        let message = text.map { String(cString: $0) } ?? ""
        logger.log(
            level: Self.logLevel(syslog: level),
            "\(message)",
            metadata: ["kafka.facility": .string(facility.map { String(cString: $0) } ?? "")]
        )
    }

    /// librdkafka logs with syslog levels.
    static func logLevel(syslog level: Int32) -> Logger.Level {
        switch level {
        case ...2: .critical
        case 3: .error
        case 4: .warning
        case 5: .notice
        case 6: .info
        default: .debug
        }
    }
}

extension rd_kafka_topic_partition_list_t {
    /// The list's elements as Swift values with their offsets.
    var entries: [(TopicPartition, Int64)] {
        (0..<Int(cnt)).map { index in
            let element = elems[index]
            return (TopicPartition(String(cString: element.topic), element.partition), element.offset)
        }
    }
}

/// Builds a C partition list, hands it to `body`, and frees it.
func withPartitionList<T>(
    _ partitions: [(TopicPartition, Int64)],
    _ body: (UnsafeMutablePointer<rd_kafka_topic_partition_list_t>) throws -> T
) rethrows -> T {
    let list = rd_kafka_topic_partition_list_new(Int32(max(partitions.count, 1)))!
    defer { rd_kafka_topic_partition_list_destroy(list) }
    for (tp, offset) in partitions {
        let element = rd_kafka_topic_partition_list_add(list, tp.topic, tp.partition)!
        element.pointee.offset = offset
    }
    return try body(list)
}
