import Foundation
import HTTPTypes
import Hummingbird
import ServiceSupport
import Shared

/// How fast one client may sync (the apps' reads, `AppReads`): per client address (an IPv6 one by its /64) and per
/// installation the request names, as the ingest counts an app's writes (`RateLimiter`); over either, 429
/// `rate_limited` with `Retry-After` and `RateLimit-*`, before anything is read. These reads share the CPU and SQLite's
/// readers with the apply loop: 3,000 syncs in 128 parallel streams were once all served. A read another instance
/// forwarded here, presenting this instance's peer key, was counted there.
struct AppReadLimitMiddleware: RouterMiddleware {
    typealias Context = ServiceRequestContext

    let limiter: RateLimiter
    /// This instance's peer key (`PartitionPeers.key`).
    let peerKey: String

    /// An installation's bucket is named by at most this much of its id (the ids' own rule is checked after).
    static let installationName = 256

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        guard limiter.limitsAnything, !ReadForwarding.isFromPeer(request, key: peerKey) else { return try await next(request, context) }
        var taken = try limiter.take(.address, limiter.client(request, peer: context.remoteAddress?.ipAddress))
        if let installation = request.uri.queryParameters.get("installation_id") {
            taken = .tighter(taken, try limiter.take(.installation, String(installation.prefix(Self.installationName))))
        }
        var response = try await next(request, context)
        if let taken { response.headers.append(contentsOf: taken.headers) }
        return response
    }
}

extension AppReads {
    /// The apps' reads on `router`, bounded in flight (`maxInFlight`, then 503 `overloaded`) and per client (`limits`):
    /// what the service serves, and what the tests call.
    func register(on router: Router<ServiceRequestContext>, limits: RateLimits, maxInFlight: Int, peerKey: String) {
        let group = router.group()
            .add(middleware: InFlightLimitMiddleware<ServiceRequestContext>(service: "orchestrator", limit: maxInFlight))
            .add(middleware: AppReadLimitMiddleware(limiter: RateLimiter(limits, service: "orchestrator"), peerKey: peerKey))
        register(on: group)
    }
}
