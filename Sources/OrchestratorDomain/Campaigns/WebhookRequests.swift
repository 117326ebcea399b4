import Foundation
import Shared

/// A webhook message rendered for one profile becomes the request the notifier makes, whole or not at all
/// (docs/webhooks.md): the endpoint's URL with the rendered `path` below it, the method, the content type, the body
/// (which must parse when the content type is JSON) and the headers (the endpoint's, then the template's). What a
/// profile value could turn into another request (a path out of the endpoint's, a line break in a header) fails the
/// message, naming the field.
enum WebhookRequests {
    /// The send's content: `url`, `method`, `content_type`, `body` and `header.<Name>`.
    static func request(
        _ rendered: [String: String], endpoint: WebhookEndpointDefinition, prefix: String
    ) throws(TemplateError) -> [String: String] {
        let path = rendered["path"] ?? ""
        if let problem = WebhookRequestRules.pathProblem(path) { throw TemplateError("\(prefix).path: \(problem)") }
        let contentType = rendered["content_type"] ?? WebhookRequestRules.defaultContentType
        let body = rendered["body"] ?? ""
        if WebhookRequestRules.isJSON(contentType), !body.isEmpty, (try? JSONParser.parse(Array(body.utf8))) == nil {
            throw TemplateError("\(prefix).body: not JSON once rendered, and the content type is \(contentType) (a value needs the json filter, or quotes)")
        }
        var request: [String: String] = [
            "url": WebhookRequestRules.url(endpoint: endpoint.url, path: path),
            "method": rendered["method"] ?? WebhookRequestRules.defaultMethod,
            "content_type": contentType, "body": body,
        ]
        // The endpoint's headers, then the template's: a template's header of the same name (in any case) wins.
        var headers: [String: (name: String, value: String)] = [:]
        for (name, value) in endpoint.headers { headers[name.lowercased()] = (name, value) }
        for (field, value) in rendered where field.hasPrefix(WebhookRequestRules.headerPrefix) {
            let name = String(field.dropFirst(WebhookRequestRules.headerPrefix.count))
            if let problem = WebhookRequestRules.headerValueProblem(value) { throw TemplateError("\(prefix).\(field): \(problem)") }
            headers[name.lowercased()] = (name, value)
        }
        for (name, value) in headers.values { request[WebhookRequestRules.headerPrefix + name] = value }
        return request
    }
}
