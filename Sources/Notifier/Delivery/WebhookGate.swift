import Foundation
import Shared
import Synchronization

/// Which webhook attempts may go now (docs/webhooks.md): none to a disabled endpoint (its messages are parked), and at
/// most `perEndpoint` at once to each endpoint, so that one that hangs holds a few slots of the channel's window and
/// never all of them. Endpoints are `project/endpoint`, the ledger's target id of a webhook.
///
/// A claim takes a lane for each attempt it hands out (`take`), the worker gives it back when the attempt's result
/// comes (`give`). A lane a failed claim transaction took and nobody gives back lapses after `lapse` (longer than any
/// attempt may run), so the count heals itself rather than shrink an endpoint's share for good.
final class WebhookGate: Sendable {
    let perEndpoint: Int
    let lapse: Duration
    private struct State {
        var disabled: Set<String> = []
        /// Endpoint → send id → when its lane was taken.
        var lanes: [String: [String: ContinuousClock.Instant]] = [:]
    }

    private let state = Mutex(State())

    init(perEndpoint: Int, lapse: Duration) {
        self.perEndpoint = max(1, perEndpoint)
        self.lapse = lapse
    }

    /// The ledger's target id of a send's call.
    static func endpointKey(_ send: SendRequest) -> String { "\(send.project)/\(send.endpoint ?? "")" }

    func isDisabled(_ endpoint: String) -> Bool { state.withLock { $0.disabled.contains(endpoint) } }

    /// Sets an endpoint's state; returns whether it changed.
    @discardableResult
    func set(_ endpoint: String, disabled: Bool) -> Bool {
        state.withLock { state in
            disabled ? state.disabled.insert(endpoint).inserted : state.disabled.remove(endpoint) != nil
        }
    }

    var disabledEndpoints: Set<String> { state.withLock { $0.disabled } }

    /// A lane of `endpoint` for the attempt of `sendID`; false when the endpoint has `perEndpoint` attempts out.
    func take(_ endpoint: String, sendID: String) -> Bool {
        let now = ContinuousClock.now
        return state.withLock { state in
            var lanes = state.lanes[endpoint, default: [:]]
            lanes = lanes.filter { now - $0.value < lapse }
            guard lanes[sendID] != nil || lanes.count < perEndpoint else {
                state.lanes[endpoint] = lanes
                return false
            }
            lanes[sendID] = now
            state.lanes[endpoint] = lanes
            return true
        }
    }

    func give(_ endpoint: String, sendID: String) {
        state.withLock { state in
            state.lanes[endpoint]?.removeValue(forKey: sendID)
            if state.lanes[endpoint]?.isEmpty == true { state.lanes.removeValue(forKey: endpoint) }
        }
    }

    /// The endpoints with every lane taken: a claim passes over their due rows.
    var saturated: [String] {
        let now = ContinuousClock.now
        return state.withLock { state in
            state.lanes.compactMap { endpoint, lanes in lanes.values.count(where: { now - $0 < lapse }) >= perEndpoint ? endpoint : nil }
        }
    }
}
