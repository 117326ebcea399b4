import Foundation
import HTTPTypes
import Hummingbird
import Metrics
import Shared

/// How fast one client may call a public endpoint, as token buckets (a burst of twice the rate): per client address
/// (an IPv6 address by its /64, which one host is given whole), per installation (the device a request names: many
/// senders cannot pile on one), and, for keys that stay on servers, per key. A key shipped in every copy of an app is
/// not limited as a whole: one sender could spend its bucket and lock out the app's other devices.
package struct RateLimits: Sendable {
    /// Requests a second per client address, with a public key or none (0: no limit).
    package var perAddress: Double
    /// Requests a second per key that stays on servers (a REST key, a backend's Segment source; 0: no limit).
    package var perKey: Double
    /// Requests a second per installation a request names (0: no limit).
    package var perInstallation: Double
    /// Proxies whose `X-Forwarded-For` names the client.
    package var trustedProxies: [AddressRange] = []
    /// The buckets' clock (tests freeze it, so that a slow machine does not refill a bucket between two requests).
    package var clock: @Sendable () -> ContinuousClock.Instant = { ContinuousClock.now }

    package init(perAddress: Double, perKey: Double, perInstallation: Double = 0, trustedProxies: [AddressRange] = []) {
        self.perAddress = perAddress
        self.perKey = perKey
        self.perInstallation = perInstallation
        self.trustedProxies = trustedProxies
    }

    package init(_ limits: ClientLimits) {
        self.init(
            perAddress: limits.perAddress, perKey: limits.perKey, perInstallation: limits.perInstallation,
            trustedProxies: limits.trustedProxies)
    }

    package static let off = RateLimits(perAddress: 0, perKey: 0)
}

/// The buckets of one service's `RateLimits`, and the 429 they answer.
package final class RateLimiter: Sendable {
    package enum Scope: String, Sendable, CaseIterable {
        case address, key, installation
    }

    private let addresses: TokenBuckets?
    private let keys: TokenBuckets?
    private let installations: TokenBuckets?
    private let clients: ClientAddress
    /// `herald_<service>_rate_limited_total`.
    private let metric: String

    package init(_ limits: RateLimits, service: String) {
        func buckets(_ rate: Double) -> TokenBuckets? { rate > 0 ? TokenBuckets(rate: rate, burst: 2 * rate, clock: limits.clock) : nil }
        addresses = buckets(limits.perAddress)
        keys = buckets(limits.perKey)
        installations = buckets(limits.perInstallation)
        clients = ClientAddress(trustedProxies: limits.trustedProxies)
        metric = "herald_\(service)_rate_limited_total"
    }

    package var limitsAnything: Bool { addresses != nil || keys != nil || installations != nil }

    /// The name a client's address is counted under: an IPv4 address, or the /64 of an IPv6 one (a host gets a /64
    /// and may use every address in it).
    package static func bucketName(address: String) -> String {
        guard let bytes = AddressRange.parse(address) else { return address }
        // An IPv4-mapped IPv6 address is its IPv4 one.
        guard bytes.count == 16 else { return bytes.map { String($0) }.joined(separator: ".") }
        let groups = stride(from: 0, to: 8, by: 2).map { String(UInt16(bytes[$0]) << 8 | UInt16(bytes[$0 + 1]), radix: 16) }
        return groups.joined(separator: ":") + "::/64"
    }

    /// The client of `request`: its peer, or behind a trusted proxy the address `X-Forwarded-For` names.
    package func client(_ request: Request, peer: String?) -> String {
        clients.of(peer: peer, forwardedFor: request.headers[values: .forwardedFor])
    }

    /// Takes a token for `name` in `scope`: the decision, or nil when the scope is not limited. Throws 429 when none is
    /// left, with `Retry-After` and `RateLimit-*`.
    @discardableResult
    package func take(_ scope: Scope, _ name: @autoclosure () -> String) throws(RateLimitedError) -> Taken? {
        let buckets: TokenBuckets? = switch scope {
        case .address: addresses
        case .key: keys
        case .installation: installations
        }
        // An unlimited scope costs nothing, not even its name.
        guard let buckets else { return nil }
        let name = scope == .address ? Self.bucketName(address: name()) : name()
        let decision = buckets.take(name)
        let taken = Taken(buckets: buckets, decision: decision)
        guard decision.allowed else {
            Counter(label: metric, dimensions: [("scope", scope.rawValue)]).increment()
            throw RateLimitedError(scope: scope, headers: taken.headers)
        }
        return taken
    }

    /// A token taken: what the answer's `RateLimit-*` headers say.
    package struct Taken: Sendable {
        let buckets: TokenBuckets
        package let decision: TokenBuckets.Decision

        /// `RateLimit-Limit`, `-Remaining`, `-Reset` (seconds until the bucket is full again) and `-Policy` (the burst
        /// over the window it refills in), as draft-ietf-httpapi-ratelimit-headers names them; `Retry-After` when refused.
        package var headers: HTTPFields {
            let window = Int((buckets.burst / buckets.rate).rounded(.up))
            let reset = decision.untilFull.components
            var headers: HTTPFields = [
                .rateLimitLimit: String(Int(buckets.burst)),
                .rateLimitRemaining: String(decision.remaining),
                .rateLimitReset: String(Int(reset.seconds) + (reset.attoseconds > 0 ? 1 : 0)),
                .rateLimitPolicy: "\(Int(buckets.burst));w=\(window)",
            ]
            if !decision.allowed { headers[.retryAfter] = String(Int(decision.retryAfter.components.seconds) + 1) }
            return headers
        }

        /// The tighter of two: the one with less left.
        package static func tighter(_ a: Taken?, _ b: Taken?) -> Taken? {
            guard let a, let b else { return a ?? b }
            return b.decision.remaining < a.decision.remaining ? b : a
        }
    }
}

/// 429 `rate_limited` in the API's one error shape, with `Retry-After` and `RateLimit-*`.
package struct RateLimitedError: HTTPResponseError, CodedError {

    package let scope: RateLimiter.Scope
    package let headers: HTTPFields
    package var status: HTTPResponse.Status { .tooManyRequests }
    package var code: String { "rate_limited" }

    package var message: String {
        "too many requests from this \(scope.rawValue); retry after the time in Retry-After"
    }

    package func response(from request: Request, context: some RequestContext) throws -> Response {
        var response = Response.jsonError(status, code, message)
        response.headers.append(contentsOf: headers)
        return response
    }
}
