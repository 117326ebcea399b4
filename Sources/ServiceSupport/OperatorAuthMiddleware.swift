import Hummingbird
import Shared

/// Operator endpoints (`/metrics`, the orchestrator's profile reads, which return emails, phones and tokens) answer
/// only with `Authorization: Bearer <HERALD_OPERATOR_TOKEN>`, or, without a token, only to loopback peers (the
/// machine's own `herald status`, the dev stack); the public APIs and the health checks are not affected.
package struct OperatorAuthMiddleware<Context: RequestContext>: RouterMiddleware {
    /// nil: no token is set, loopback peers only.
    let token: [UInt8]?
    /// A path equal to one of these, or under one ending in `/`.
    let paths: [String]

    package init(token: String?, paths: [String]) {
        self.token = token.map { Array($0.utf8) }
        self.paths = paths
    }

    package func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws
        -> Response
    {
        let path = request.uri.path
        guard paths.contains(where: { path == $0 || ($0.hasSuffix("/") && path.hasPrefix($0)) }) else {
            return try await next(request, context)
        }
        guard let token else {
            guard (context as? any RemoteAddressRequestContext)?.remoteAddress?.isLoopback == true else {
                return .jsonError(
                    .forbidden, "operator_endpoint_local_only",
                    "without HERALD_OPERATOR_TOKEN this operator endpoint answers this machine only: set the token to reach it from elsewhere")
            }
            return try await next(request, context)
        }
        let supplied = request.headers.bearerToken.map { Array($0.utf8) }
        guard let supplied, ConstantTime.equal(supplied, token) else {
            var response = Response.jsonError(
                .unauthorized, "operator_token_required", "this operator endpoint needs 'Authorization: Bearer <HERALD_OPERATOR_TOKEN>'")
            response.headers[.wwwAuthenticate] = "Bearer"
            return response
        }
        return try await next(request, context)
    }
}

/// A router's responder with the operator check in front of every route.
struct OperatorGuardedResponder<Inner: HTTPResponder>: HTTPResponder where Inner.Context: RequestContext {
    typealias Context = Inner.Context
    let inner: Inner
    let `guard`: OperatorAuthMiddleware<Inner.Context>

    func respond(to request: Request, context: Context) async throws -> Response {
        try await self.guard.handle(request, context: context) { request, context in
            try await inner.respond(to: request, context: context)
        }
    }
}
