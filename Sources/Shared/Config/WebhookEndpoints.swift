import Foundation

/// `kind: webhook_endpoint` (docs/webhooks.md): one of the project's own HTTP endpoints that campaigns call. The URL is
/// fixed here; a template adds a `path` below it, never another host. Its signing secrets are not here (the
/// configuration is readable by every service): they stay in the notifier's `HERALD_APPS_FILE`.
package struct WebhookEndpointDefinition: Sendable {
    package var id: String
    package var project: String
    package var name: String
    /// `https://host[:port][/path]`, without a query or fragment (`http://` only where the notifier allows plain HTTP).
    package var url: String
    /// Headers sent on every call, before the template's (which may not name the same).
    package var headers: [String: String] = [:]
    package var origin: ConfigOrigin
    package var key: String { "\(project)/\(id)" }
}

/// What makes a webhook request whole: the template's fields, checked when read (`herald config validate`) and again
/// once rendered (a profile value may bring anything).
package enum WebhookRequestRules {
    /// `method`: POST unless the template says otherwise.
    package static let methods = ["POST", "PUT", "PATCH", "DELETE"]
    package static let defaultMethod = "POST"
    package static let defaultContentType = "application/json"
    /// A template's headers (`headers: {Name: text}`) are the fields `header.<Name>`.
    package static let headerPrefix = "header."
    /// At most this many headers per request, and this many bytes per header value.
    package static let maxHeaders = 32
    package static let maxHeaderValueBytes = 4096
    /// Redirects followed, each one's address checked like the first.
    package static let maxRedirects = 3

    /// Headers the notifier writes (the signature's, the body's framing) or that steer the connection: a template may
    /// not set them.
    package static let reservedHeaders: Set<String> = [
        "webhook-id", "webhook-timestamp", "webhook-signature", "content-type", "content-length", "host",
        "transfer-encoding", "connection", "expect", "te", "upgrade", "keep-alive", "trailer", "proxy-authorization",
        "proxy-connection",
    ]

    /// Why a header name cannot be a template's (nil: it can): an HTTP token, and not reserved.
    package static func headerNameProblem(_ name: String) -> String? {
        let token = Set("!#$%&'*+-.^_`|~".unicodeScalars)
        guard !name.isEmpty, name.utf8.count <= 128,
            name.unicodeScalars.allSatisfy({ $0.isASCII && (CharacterSet.alphanumerics.contains($0) || token.contains($0)) })
        else { return "\"\(name)\" is not an HTTP header name (letters, digits and !#$%&'*+-.^_`|~)" }
        if reservedHeaders.contains(name.lowercased()) {
            return "\(name) is set by Herald (\(name.lowercased() == "content-type" ? "use `content_type`" : "the signature's and the connection's headers"))"
        }
        return nil
    }

    /// Why a header's value cannot be sent (nil: it can): no line break or NUL (another header would start), bounded.
    package static func headerValueProblem(_ value: String) -> String? {
        if value.unicodeScalars.contains(where: { $0 == "\r" || $0 == "\n" || $0 == "\0" }) { return "a line break in a header" }
        if value.utf8.count > maxHeaderValueBytes { return "\(value.utf8.count) bytes, over \(maxHeaderValueBytes) for a header" }
        return nil
    }

    /// Why a rendered `path` cannot follow the endpoint's URL (nil: it can): empty, or `/…` or `?…`; no fragment, blank,
    /// control character or backslash; no `.` or `..` segment (even percent-encoded), which would climb out of the
    /// endpoint's path.
    package static func pathProblem(_ path: String) -> String? {
        guard !path.isEmpty else { return nil }
        guard path.hasPrefix("/") || path.hasPrefix("?") else { return "starts with \"/\" or \"?\" (it follows the endpoint's URL)" }
        if let bad = path.unicodeScalars.first(where: {
            $0.value <= 0x20 || $0.value == 0x7F || $0 == "\\" || $0 == "#" || !$0.isASCII
        }) {
            return bad.isASCII && bad.value > 0x20 && bad.value != 0x7F
                ? "holds \"\(bad)\" (percent-encode it, with url_encode)"
                : "holds a blank, a control or a non-ASCII character (percent-encode it, with url_encode)"
        }
        let pathPart = path.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
        for segment in pathPart.split(separator: "/", omittingEmptySubsequences: false) {
            let decoded = String(segment).removingPercentEncoding ?? String(segment)
            if decoded == "." || decoded == ".." { return "a \"\(decoded)\" segment would leave the endpoint's path" }
        }
        return nil
    }

    /// Why an endpoint's URL cannot be one (nil: it can).
    package static func endpointURLProblem(_ url: String) -> String? {
        guard url.hasPrefix("https://") || url.hasPrefix("http://"), let parsed = URLComponents(string: url),
            let host = parsed.host, !host.isEmpty
        else { return "expected an https:// URL, such as https://crm.example.com/hooks" }
        if parsed.user != nil || parsed.password != nil { return "credentials in the URL would travel with every call: use `headers`" }
        if parsed.query != nil || parsed.fragment != nil { return "no query or fragment (a template's `path` may add a query)" }
        if url.unicodeScalars.contains(where: { $0.value <= 0x20 || !$0.isASCII }) { return "blanks and non-ASCII characters are percent-encoded" }
        return nil
    }

    /// The URL a call goes to: the endpoint's, then the rendered path (a trailing `/` of the endpoint's is not doubled).
    package static func url(endpoint: String, path: String) -> String {
        var base = endpoint
        if path.hasPrefix("/") { while base.hasSuffix("/") { base.removeLast() } }
        return base + path
    }

    /// Whether a content type carries JSON (`application/json`, `application/*+json`), whose body must then parse.
    package static func isJSON(_ contentType: String) -> Bool {
        let type = contentType.split(separator: ";").first.map { $0.trimmingCharacters(in: .whitespaces).lowercased() } ?? ""
        return type == "application/json" || (type.hasPrefix("application/") && type.hasSuffix("+json"))
    }
}
