import Foundation
import Synchronization

/// What the simulators share: the messages each received, the faults they were told to answer with, and the targets
/// they treat as dead or unsubscribed. Tests hold it directly; the `herald-simulators` process exposes it on
/// `/_sim/…`.
package final class SimulatorState: Sendable {
    /// A message a simulator accepted or refused.
    package struct Received: Sendable, Codable, Equatable {
        /// `apns`, `fcm`, `smtp`, `sms`.
        package var provider: String
        /// The token, the recipient address, the phone number.
        package var target: String
        package var headers: [String: String]
        package var body: String
        /// The status it answered (HTTP status, or SMTP reply code).
        package var status: Int
        package var at: Date
    }

    /// An answer to give instead of the normal one: to the next `count` requests (nil: until cleared).
    package struct Fault: Sendable, Codable, Equatable {
        package var status: Int
        /// APNs `reason`, FCM `errorCode`, SMS `code`; defaults per provider when nil.
        package var reason: String?
        package var retryAfter: Int?
        /// Delay before answering, in milliseconds (a slow provider); the answer is the normal one when `status` is 0.
        package var delayMilliseconds: Int?
        package var count: Int?
        /// The answer waits until `releaseHeld()`: a call kept in flight for as long as a test needs, whatever the
        /// machine's speed, instead of a delay a loaded machine outran (or a deadline it missed).
        package var held: Bool?

        package init(
            status: Int, reason: String? = nil, retryAfter: Int? = nil, delayMilliseconds: Int? = nil, count: Int? = nil,
            held: Bool? = nil
        ) {
            self.status = status
            self.reason = reason
            self.retryAfter = retryAfter
            self.delayMilliseconds = delayMilliseconds
            self.count = count
            self.held = held
        }

        enum CodingKeys: String, CodingKey {
            case status, reason, count, held
            case retryAfter = "retry_after", delayMilliseconds = "delay_ms"
        }
    }

    private struct State {
        var received: [String: [Received]] = [:]
        var counts: [String: Int] = [:]
        var faults: [String: Fault] = [:]
        var invalid: Set<String> = []
        var unsubscribed: Set<String> = []
        var accepted: [String: Int] = [:]
        var carrying: [String: Set<Int>] = [:]
        var webhookSecrets: [String] = []
    }

    private let state = Mutex(State())
    /// Messages kept per provider (the oldest are dropped beyond; counts go on).
    package let keep: Int

    package init(keep: Int = 10_000) { self.keep = keep }

    package func record(_ message: Received) {
        state.withLock { state in
            state.counts[message.provider, default: 0] += 1
            state.received[message.provider, default: []].append(message)
            if state.received[message.provider]!.count > keep { state.received[message.provider]!.removeFirst(keep / 10) }
        }
    }

    /// The `whsec_` secrets the webhook receiver verifies signatures with (none: it verifies nothing).
    package var webhookSecrets: [String] {
        get { state.withLock { $0.webhookSecrets } }
        set { state.withLock { $0.webhookSecrets = newValue } }
    }

    package func received(_ provider: String) -> [Received] { state.withLock { $0.received[provider] ?? [] } }
    /// Requests answered since the start (or the last reset), kept or not.
    package func count(_ provider: String) -> Int { state.withLock { $0.counts[provider] ?? 0 } }

    /// The fault to apply to the next request of `provider`, counting it down.
    package func takeFault(_ provider: String) -> Fault? {
        state.withLock { state in
            guard var fault = state.faults[provider] else { return nil }
            if let count = fault.count {
                if count <= 1 { state.faults.removeValue(forKey: provider) } else {
                    fault.count = count - 1
                    state.faults[provider] = fault
                }
            }
            return fault
        }
    }

    /// A connection the simulator accepted; its number, for `carried`.
    package func accepted(_ provider: String) -> Int {
        state.withLock { state in
            state.accepted[provider, default: 0] += 1
            return state.accepted[provider]!
        }
    }

    /// Connection `number` carried a request.
    package func carried(_ provider: String, connection number: Int) {
        state.withLock { _ = $0.carrying[provider, default: []].insert(number) }
    }

    /// The connections that carried requests (HTTP/2 clients multiplex: one per client and host). A socket that carried
    /// none is not one: in a test process, any client may connect to a port a simulator took over from an earlier one
    /// (an embedded broker's, whose clients reconnect until they are shut down).
    package func connections(_ provider: String) -> Int { state.withLock { $0.carrying[provider]?.count ?? 0 } }
    /// Every socket accepted, requests or not.
    package func acceptedConnections(_ provider: String) -> Int { state.withLock { $0.accepted[provider] ?? 0 } }

    package func setFault(_ provider: String, _ fault: Fault?) { state.withLock { $0.faults[provider] = fault } }

    /// Answers held by a `held` fault, each run once released.
    private let heldAnswers = Mutex<[@Sendable () -> Void]>([])

    /// Keeps `answer` until `releaseHeld()`.
    package func hold(_ answer: @escaping @Sendable () -> Void) { heldAnswers.withLock { $0.append(answer) } }

    /// Answers held so far.
    package var heldCount: Int { heldAnswers.withLock { $0.count } }

    /// Sends every answer held so far.
    package func releaseHeld() {
        for answer in heldAnswers.withLock({ held in defer { held = [] }; return held }) { answer() }
    }
    package func markInvalid(_ targets: [String]) { state.withLock { $0.invalid.formUnion(targets) } }
    package func markUnsubscribed(_ targets: [String]) { state.withLock { $0.unsubscribed.formUnion(targets) } }
    package func isInvalid(_ target: String) -> Bool { state.withLock { $0.invalid.contains(target) } }
    package func isUnsubscribed(_ target: String) -> Bool { state.withLock { $0.unsubscribed.contains(target) } }

    /// Forgets everything recorded and every fault, and sends the answers held.
    package func reset() {
        // The webhook secrets are the receiver's configuration, not what it received: kept.
        state.withLock { state in
            let secrets = state.webhookSecrets
            state = State()
            state.webhookSecrets = secrets
        }
        releaseHeld()
    }
}
