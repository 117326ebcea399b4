import Foundation
import HTTPTypes
import Hummingbird
import Metrics
import ServiceSupport
import Shared

/// How fast one client may write: per client address for the keys that ship in apps and web pages (and for requests
/// without a valid key), per key for every key. Each is a token bucket (a burst of twice the rate); over either,
/// 429 `rate_limited` with `Retry-After` and `RateLimit-*` headers, before the body is read. The limits are each ingest
/// instance's own.
struct RateLimits: Sendable {
    /// Requests a second per client address, with a public key or none (0: no limit).
    var perAddress: Double
    /// Requests a second per API key, any kind (0: no limit).
    var perKey: Double
    /// Proxies whose `X-Forwarded-For` names the client.
    var trustedProxies: [AddressRange] = []
    /// The buckets' clock (tests freeze it, so that a slow machine does not refill a bucket between two requests).
    var clock: @Sendable () -> ContinuousClock.Instant = { ContinuousClock.now }

    static let off = RateLimits(perAddress: 0, perKey: 0)
}

struct RateLimitMiddleware: RouterMiddleware {
    typealias Context = IngestContext

    let catalog: AppsCatalog
    let addresses: TokenBuckets?
    let keys: TokenBuckets?
    let clients: ClientAddress

    init(catalog: AppsCatalog, limits: RateLimits) {
        self.catalog = catalog
        addresses = limits.perAddress > 0
            ? TokenBuckets(rate: limits.perAddress, burst: 2 * limits.perAddress, clock: limits.clock) : nil
        keys = limits.perKey > 0 ? TokenBuckets(rate: limits.perKey, burst: 2 * limits.perKey, clock: limits.clock) : nil
        clients = ClientAddress(trustedProxies: limits.trustedProxies)
    }

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws
        -> Response
    {
        guard addresses != nil || keys != nil else { return try await next(request, context) }
        let (key, isPublic) = credential(request)
        var binding: (buckets: TokenBuckets, decision: TokenBuckets.Decision)?
        func take(_ buckets: TokenBuckets?, _ name: String, scope: String) throws(APIError) {
            guard let buckets else { return }
            let decision = buckets.take(name)
            if binding == nil || decision.remaining < binding!.decision.remaining { binding = (buckets, decision) }
            guard decision.allowed else {
                Counter(label: "herald_ingest_rate_limited_total", dimensions: [("scope", scope)]).increment()
                var error = APIError(
                    status: .tooManyRequests, code: "rate_limited",
                    message: "too many requests from this \(scope == "address" ? "address" : "key"); retry after the time in Retry-After")
                error.headers = Self.headers(buckets, decision)
                error.headers[.retryAfter] = String(Int(decision.retryAfter.components.seconds) + 1)
                throw error
            }
        }
        if isPublic {
            let address = clients.of(
                peer: context.remoteAddress?.ipAddress, forwardedFor: request.headers[values: HTTPField.Name("X-Forwarded-For")!])
            try take(addresses, address, scope: "address")
        }
        if let key { try take(keys, key, scope: "key") }
        let headers = binding.map { Self.headers($0.buckets, $0.decision) } ?? [:]
        do {
            var response = try await next(request, context)
            response.headers.append(contentsOf: headers)
            return response
        } catch var error as APIError {
            error.headers.append(contentsOf: headers)
            throw error
        }
    }

    /// The request's key, and whether it is public: an app key, a Segment source that signs its users (a website),
    /// or no valid key at all. A REST key and a backend source stay on servers.
    func credential(_ request: Request) -> (key: String?, isPublic: Bool) {
        let key = request.headers[HTTPField.Name("X-Api-Key")!] ?? request.headers.bearerToken ?? request.headers.basicUser
        guard let key, let credential = catalog.credential(for: key) else { return (nil, true) }
        switch credential {
        case .rest: return (key, false)
        case .app: return (key, true)
        case .source(let project, let id):
            let source = catalog.project(project)?.sources.first { $0.id == id }
            return (key, source?.requireSignedIdentity ?? true)
        }
    }

    /// `RateLimit-Limit`, `-Remaining`, `-Reset` (seconds until the bucket is full again) and `-Policy` (the burst over
    /// the window it refills in), as draft-ietf-httpapi-ratelimit-headers names them.
    static func headers(_ buckets: TokenBuckets, _ decision: TokenBuckets.Decision) -> HTTPFields {
        let window = Int((buckets.burst / buckets.rate).rounded(.up))
        return [
            HTTPField.Name("RateLimit-Limit")!: String(Int(buckets.burst)),
            HTTPField.Name("RateLimit-Remaining")!: String(decision.remaining),
            HTTPField.Name("RateLimit-Reset")!: String(Int(decision.untilFull.components.seconds) + (decision.untilFull.components.attoseconds > 0 ? 1 : 0)),
            HTTPField.Name("RateLimit-Policy")!: "\(Int(buckets.burst));w=\(window)",
        ]
    }
}
