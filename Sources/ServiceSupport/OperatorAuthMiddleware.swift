import Hummingbird
import Shared

/// Operator endpoints (`/metrics`, the orchestrator's profile reads, which return emails, phones and tokens) answer
/// only with `Authorization: Bearer <HERALD_OPERATOR_TOKEN>`, or, without a token, only to loopback peers (the
/// machine's own `herald status`, the dev stack) that name this machine in `Host`; the public APIs and the health
/// checks are not affected.
///
/// The `Host` check is what keeps a web page out: a page on any site can make the browser on this machine resolve its
/// own name to 127.0.0.1 (DNS rebinding) and read the answer as same-origin, but its requests then say
/// `Host: attacker.example`, which no tool of the operator's sends.
///
/// It is attached to the operator routes themselves (`ServiceMain.httpApplication`'s group), never chosen by
/// comparing paths: whatever spelling of a path the router matches to one of them (`//metrics`, `/metrics/`), the
/// check runs, because it is part of that route's responder.
package struct OperatorAuthMiddleware<Context: RequestContext>: RouterMiddleware {
    /// nil: no token is set, loopback peers only.
    let token: [UInt8]?

    package init(token: String?) {
        self.token = token.map { Array($0.utf8) }
    }

    package func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws
        -> Response
    {
        guard let token else {
            guard (context as? any RemoteAddressRequestContext)?.remoteAddress?.isLoopback == true else {
                return .jsonError(
                    .forbidden, "operator_endpoint_local_only",
                    "without HERALD_OPERATOR_TOKEN this operator endpoint answers this machine only: set the token to reach it from elsewhere")
            }
            guard Self.namesLoopback(request.head.authority) else {
                return .jsonError(
                    .forbidden, "operator_endpoint_local_only",
                    "without HERALD_OPERATOR_TOKEN this operator endpoint answers requests for localhost or a loopback address only (Host names another)")
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

    /// A `Host` (`authority`) that names this machine: `localhost` or a loopback address, with any port. A request
    /// without one (HTTP/1.0) names nothing else either: browsers always send it.
    static func namesLoopback(_ authority: String?) -> Bool {
        guard let authority, !authority.isEmpty else { return true }
        var host = Substring(authority.lowercased())
        if host.hasPrefix("[") {
            guard let close = host.firstIndex(of: "]") else { return false }
            host = host[...close]
        } else if let colon = host.lastIndex(of: ":") {
            host = host[..<colon]
        }
        if host.hasSuffix("."), host.count > 1 { host = host.dropLast() }
        return CommonConfig.isLoopback(host: String(host))
    }
}
