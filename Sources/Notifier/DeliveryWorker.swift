import Foundation
import Logging
import ServiceLifecycle
import Shared
import Synchronization

/// Delivers one channel: claims due attempts from the partitions, runs up to each provider's limit at once, and
/// writes results back as they come (a sliding window: one slow answer holds one slot, not a batch). Each channel has
/// its own worker, so a failing SMS provider never delays push.
///
/// Attempts come two ways: the worker's own claims (retries, held and waiting sends, what a claim cut), and attempts
/// the consumer claimed in the transaction that stored their sends (`NotifierPartitions.apply`), handed over with
/// `deliver` after reserving room in the window (`reserve`), so that a send stored and due at once costs no claim
/// transaction of its own.
final class DeliveryWorker: Service, @unchecked Sendable {
    let channel: MessageChannel
    let partitions: NotifierPartitions
    /// By platform for push (`ios`, `android`, `web`), else under the channel's name.
    let providers: [String: any DeliveryProvider]
    let retry: RetryPolicy
    let logger: Logger
    /// Webhooks: the lanes per endpoint its claims take, given back here.
    let gate: WebhookGate?
    /// How often due retries are looked for when nothing wakes the worker.
    var pollInterval: Duration = .milliseconds(200)
    private let slots: [String: Slots]
    /// Attempts in flight at most: the sum of the providers' limits.
    let window: Int
    private let events = Events()
    /// Slots of the window not taken by attempts in flight or reserved for attempts on their way (`reserve`).
    private let room: Room

    init(
        channel: MessageChannel, partitions: NotifierPartitions, providers: [String: any DeliveryProvider],
        retry: RetryPolicy, logger: Logger, gate: WebhookGate? = nil
    ) {
        self.channel = channel
        self.gate = gate
        self.partitions = partitions
        self.providers = providers
        self.retry = retry
        self.logger = logger
        var slots: [String: Slots] = [:]
        var window = 0
        // One provider can serve several platforms (FCM: android and web): its limit counts once.
        for provider in providers.values where slots[provider.name] == nil {
            slots[provider.name] = Slots(provider.maxInFlight)
            window += provider.maxInFlight
        }
        self.slots = slots
        self.window = max(1, window)
        self.room = Room(free: self.window)
    }

    /// Wakes the worker (new sends were queued).
    func wake() { events.signal() }

    /// Takes up to `count` free slots of the window for attempts the caller is about to claim and hand over
    /// (`deliver`); whatever it does not use goes back with `unreserve`. None once the worker is stopping.
    func reserve(upTo count: Int) -> Int { room.take(upTo: count) }

    func unreserve(_ count: Int) { room.give(count) }

    /// Attempts claimed elsewhere, each in a slot reserved for it: made as the worker's own claims are.
    func deliver(_ attempts: [NotifierPartitions.ClaimedAttempt]) {
        guard !attempts.isEmpty else { return }
        events.handed(attempts)
    }

    func run() async throws {
        await withDiscardingTaskGroup { group in
            var stopping = false
            func start(_ items: [NotifierPartitions.ClaimedAttempt]) {
                for item in items {
                    group.addTask { [self] in
                        // Made once its claim is in the partition's changelog; turned away if the partition was
                        // lost first (nil result: its hold is released already).
                        let attempt = item.claimed.attempt
                        // A webhook's lane (taken by its claim) is given back whatever comes of it.
                        defer { if self.channel == .webhook { self.gate?.give(attempt.target.id, sendID: attempt.request.sendID) } }
                        guard await item.admitted else {
                            self.events.finished(Finished(partition: item.partition, result: nil))
                            return
                        }
                        let started = ContinuousClock.now
                        let (name, answer) = await self.attempt(attempt)
                        let duration = ContinuousClock.now - started
                        self.log(attempt, provider: name, outcome: answer.outcome, duration: duration)
                        // This instance stops calling an endpoint that is gone at once; the others learn it from
                        // herald.webhooks.
                        if case .endpointGone = answer.outcome { self.gate?.set(attempt.target.id, disabled: true) }
                        self.events.finished(Finished(
                            partition: item.partition,
                            result: AttemptResults.AttemptResult(
                                claimed: item.claimed, provider: name, outcome: answer.outcome, finishedAt: Date(),
                                httpStatus: answer.httpStatus, duration: duration)))
                    }
                }
            }
            // In flight: every slot not free, those reserved for attempts on their way included (they come).
            while !stopping || room.free < window {
                if !stopping && (Task.isCancelled || Task.isShuttingDownGracefully) {
                    stopping = true
                    room.stop()
                }
                if !stopping {
                    let limit = room.take(upTo: window)
                    if limit > 0 {
                        let claimed = await partitions.claim(channel, limit: limit, fullScan: pollInterval)
                        room.give(limit - claimed.count)
                        start(claimed)
                    }
                }
                let (finished, handed) = await events.wait(for: room.free > 0 ? pollInterval : .seconds(1))
                start(handed)
                room.give(finished.count)
                // Each partition's results at once, each on its own database's writer.
                await withDiscardingTaskGroup { completions in
                    for (partition, items) in Dictionary(grouping: finished, by: \.partition) {
                        let results = items.compactMap(\.result)
                        guard !results.isEmpty else { continue }
                        completions.addTask { [partitions, retry] in
                            await partitions.complete(partition: partition, results: results, retry: retry)
                        }
                    }
                }
            }
        }
        logger.info("delivery worker stopped", metadata: ["channel": "\(channel)"])
    }

    /// One line per provider call, with the correlation ids: the ingest request (`request_id`, as in the ingest's
    /// request log), the triggering record (`event_id`) and the send, and the target's app and platform. No custom ID,
    /// installation id, address or number (as the ingest's request log): an installation id opens that installation's
    /// inbox and names its writes; `herald tail herald.deliveries` has them for a send id.
    private func log(_ attempt: DeliveryAttempt, provider: String, outcome: ProviderOutcome, duration: Duration) {
        let send = attempt.request
        var metadata: Logger.Metadata = [
            "send_id": .string(send.sendID), "campaign": .string(send.campaign), "channel": .string(channel.rawValue),
            "provider": .string(provider), "attempt": .stringConvertible(attempt.attempt),
            "duration_ms": .stringConvertible(duration.milliseconds),
        ]
        if let app = attempt.target.app { metadata["app"] = .string(app) }
        if let platform = attempt.target.platform { metadata["platform"] = .string(platform.rawValue) }
        if let id = send.requestID { metadata["request_id"] = .string(id) }
        if let id = send.trigger.eventID { metadata["event_id"] = .string(id) }
        switch outcome {
        case .accepted(let messageID):
            metadata["outcome"] = "accepted"
            if let messageID { metadata["provider_message_id"] = .string(messageID) }
            logger.info("delivery", metadata: metadata)
        case .retry(let reason, _):
            metadata["outcome"] = "retry"
            metadata["reason"] = .string(reason.text)
            logger.warning("delivery", metadata: metadata)
        case .failed(let reason), .targetInvalid(let reason), .unsubscribed(let reason), .endpointGone(let reason):
            metadata["outcome"] = switch outcome {
            case .targetInvalid: "target_invalid"
            case .unsubscribed: "unsubscribed"
            case .endpointGone: "endpoint_gone"
            default: "failed"
            }
            metadata["reason"] = .string(reason.text)
            logger.warning("delivery", metadata: metadata)
        }
    }

    private func attempt(_ attempt: DeliveryAttempt) async -> (String, ProviderAnswer) {
        let key = channel == .push ? attempt.target.platform?.rawValue ?? "" : channel.rawValue
        guard let provider = providers[key] else {
            return ("none", ProviderAnswer(outcome: .failed(reason: .herald(.providerNotConfigured, detail: "no \(channel == .push ? "push provider for \(key)" : "\(channel.rawValue) provider") is configured"))))
        }
        let slots = self.slots[provider.name]!
        await slots.acquire()
        defer { slots.release() }
        return (provider.name, await provider.attempt(attempt, now: Date()))
    }

    struct Finished: Sendable {
        var partition: Int32
        /// Nil: the attempt was not made (`NotifierPartitions.ClaimedAttempt.admitted`).
        var result: AttemptResults.AttemptResult?
    }

    /// Finished attempts and wake-ups, waited for with a timeout.
    final class Events: Sendable {
        private struct State {
            var finished: [Finished] = []
            var handed: [NotifierPartitions.ClaimedAttempt] = []
            var signaled = false
            var waiter: CheckedContinuation<Void, Never>?
        }

        private let state = Mutex(State())

        func finished(_ item: Finished) {
            let waiter = state.withLock { state in
                state.finished.append(item)
                defer { state.waiter = nil }
                return state.waiter
            }
            waiter?.resume()
        }

        func handed(_ attempts: [NotifierPartitions.ClaimedAttempt]) {
            let waiter = state.withLock { state in
                state.handed += attempts
                defer { state.waiter = nil }
                return state.waiter
            }
            waiter?.resume()
        }

        func signal() {
            let waiter = state.withLock { state in
                state.signaled = true
                defer { state.waiter = nil }
                return state.waiter
            }
            waiter?.resume()
        }

        /// What finished and what was handed over since the last call, waiting up to `timeout` for either or a wake-up.
        func wait(for timeout: Duration) async -> (finished: [Finished], handed: [NotifierPartitions.ClaimedAttempt]) {
            let ready = state.withLock { state in !state.finished.isEmpty || !state.handed.isEmpty || state.signaled }
            if !ready {
                let timer = Task {
                    try? await Task.sleep(for: timeout)
                    self.signal()
                }
                await withCheckedContinuation { continuation in
                    let resumeNow = state.withLock { state -> Bool in
                        if !state.finished.isEmpty || !state.handed.isEmpty || state.signaled { return true }
                        state.waiter = continuation
                        return false
                    }
                    if resumeNow { continuation.resume() }
                }
                timer.cancel()
            }
            return state.withLock { state in
                defer {
                    state.finished.removeAll()
                    state.handed.removeAll()
                    state.signaled = false
                }
                return (state.finished, state.handed)
            }
        }
    }
}

/// The window's free slots: taken by the worker's claims and by reservations for attempts handed over, given back as
/// attempts finish (or as a reservation goes unused). Nothing is taken once the worker stops.
final class Room: Sendable {
    private struct State {
        var free: Int
        var stopped = false
    }

    private let state: Mutex<State>

    init(free: Int) { state = Mutex(State(free: free)) }

    var free: Int { state.withLock { $0.free } }

    func take(upTo count: Int) -> Int {
        state.withLock { state in
            guard !state.stopped else { return 0 }
            let taken = min(max(0, count), state.free)
            state.free -= taken
            return taken
        }
    }

    func give(_ count: Int) {
        guard count > 0 else { return }
        state.withLock { $0.free += count }
    }

    func stop() { state.withLock { $0.stopped = true } }
}

/// A counting semaphore for async callers: a provider's attempts in flight.
final class Slots: Sendable {
    private struct State {
        var free: Int
        var waiters: [CheckedContinuation<Void, Never>] = []
    }

    private let state: Mutex<State>

    init(_ count: Int) { state = Mutex(State(free: count)) }

    func acquire() async {
        await withCheckedContinuation { continuation in
            let now = state.withLock { state -> Bool in
                if state.free > 0 {
                    state.free -= 1
                    return true
                }
                state.waiters.append(continuation)
                return false
            }
            if now { continuation.resume() }
        }
    }

    func release() {
        let next = state.withLock { state -> CheckedContinuation<Void, Never>? in
            if state.waiters.isEmpty {
                state.free += 1
                return nil
            }
            return state.waiters.removeFirst()
        }
        next?.resume()
    }
}
