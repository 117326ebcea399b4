import HTTPTypes
import Hummingbird

/// A router's responder that answers 405 with `Allow` for a method a path does not take (the router alone answers
/// 404, as for a path that does not exist). Paths are matched on the routes' templates: a `{name}` segment matches any,
/// and, as OpenAPI says, a path matches its most concrete templates only (`/v1/profiles/update` is the update
/// endpoint, not the profile `update` of `/v1/profiles/{custom_id}`, which is reached percent-encoded:
/// `/v1/profiles/%75pdate`).
package struct MethodNotAllowedResponder<Inner: HTTPResponder>: HTTPResponder where Inner.Context: RequestContext {
    package typealias Context = Inner.Context
    let inner: Inner
    /// Each route template's segments (nil: a parameter) and the methods it takes.
    let templates: [(segments: [Substring?], methods: Set<HTTPRequest.Method>)]

    package init(inner: Inner, routes: [(path: String, method: HTTPRequest.Method)]) {
        self.inner = inner
        var byPath: [String: Set<HTTPRequest.Method>] = [:]
        for route in routes { byPath[route.path, default: []].insert(route.method) }
        templates = byPath.map { path, methods in
            (
                path.split(separator: "/").map { segment in
                    segment.hasPrefix("{") || segment.hasPrefix(":") || segment == "*" ? nil : segment
                }, methods
            )
        }
    }

    package func respond(to request: Request, context: Context) async throws -> Response {
        let segments = request.uri.path.split(separator: "/")
        var allowed: Set<HTTPRequest.Method> = []
        var concrete = -1
        for template in templates where template.segments.count == segments.count {
            guard zip(template.segments, segments).allSatisfy({ $0 == nil || $0 == $1 }) else { continue }
            let fixed = template.segments.count { $0 != nil }
            if fixed > concrete { (allowed, concrete) = ([], fixed) }
            if fixed == concrete { allowed.formUnion(template.methods) }
        }
        guard allowed.isEmpty || allowed.contains(request.method) else {
            var response = Response.jsonError(
                .methodNotAllowed, "method_not_allowed", "\(request.method) is not allowed here; allowed: "
                    + allowed.map(\.rawValue).sorted().joined(separator: ", "))
            response.headers[.allow] = allowed.map(\.rawValue).sorted().joined(separator: ", ")
            return response
        }
        return try await inner.respond(to: request, context: context)
    }
}
