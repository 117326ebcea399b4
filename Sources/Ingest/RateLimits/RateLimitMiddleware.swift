import Foundation
import HTTPTypes
import Hummingbird
import ServiceSupport
import Shared

/// How fast one client may write (`RateLimiter`): per client address for the keys that ship in apps and web pages (and
/// for requests without a valid key), per key for the keys that stay on servers, before the body is read; per
/// installation once the body names one (`AppController`). Over any, 429 `rate_limited` with `Retry-After` and
/// `RateLimit-*` headers (every answer of a limited request carries the tightest bucket's). The limits are each ingest
/// instance's own.
struct RateLimitMiddleware: RouterMiddleware {
    typealias Context = IngestContext

    let catalog: AppsCatalog
    let limiter: RateLimiter

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws
        -> Response
    {
        guard limiter.limitsAnything else { return try await next(request, context) }
        let (key, isPublic) = credential(request)
        var taken: RateLimiter.Taken?
        if isPublic {
            taken = try limiter.take(.address, limiter.client(request, peer: context.remoteAddress?.ipAddress))
        } else if let key {
            // A key shipped in every copy of an app is not counted as one: a sender could spend it for every device.
            taken = try limiter.take(.key, key)
        }
        let headers = taken?.headers ?? [:]
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
        let key = request.headers[.apiKey] ?? request.headers.bearerToken ?? request.headers.basicUser
        guard let key, let credential = catalog.credential(for: key) else { return (nil, true) }
        switch credential {
        case .rest: return (key, false)
        case .app: return (key, true)
        case .source(let project, let id):
            let source = catalog.project(project)?.sources.first { $0.id == id }
            return (key, source?.requireSignedIdentity ?? true)
        }
    }
}
