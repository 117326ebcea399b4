import Foundation

/// `kind: webhook_endpoint` and the variants of a webhook template (docs/webhooks.md): every field checked, with its
/// file and line.
extension ConfigReader {
    static let webhookEndpointFields = ["project", "name", "url", "headers"]

    /// `kind: webhook_endpoint`: its URL (https, no credentials, query or fragment) and fixed headers.
    mutating func webhookEndpoint(_ node: ConfigNode, id: String, project: String, origin: ConfigOrigin) -> WebhookEndpointDefinition? {
        guard let url = string(node, "url") else { return nil }
        if let problem = WebhookRequestRules.endpointURLProblem(url) {
            fail(node["url"], "url: \(problem)")
            return nil
        }
        var endpoint = WebhookEndpointDefinition(
            id: id, project: project, name: string(node, "name", required: false) ?? id, url: url, origin: origin)
        if let headersNode = node["headers"] {
            guard case .object(let members) = headersNode.value else {
                fail(headersNode, "headers: expected a mapping of header names to values, found \(headersNode.typeName)")
                return nil
            }
            for (name, value) in members {
                if let problem = WebhookRequestRules.headerNameProblem(name) { fail(value, "headers.\(name): \(problem)"); continue }
                guard let text = value.scalarText else { fail(value, "headers.\(name): expected a string, found \(value.typeName)"); continue }
                if let problem = WebhookRequestRules.headerValueProblem(text) { fail(value, "headers.\(name): \(problem)"); continue }
                endpoint.headers[name] = text
            }
            if endpoint.headers.count > WebhookRequestRules.maxHeaders {
                fail(headersNode, "headers: \(endpoint.headers.count), at most \(WebhookRequestRules.maxHeaders)")
            }
        }
        return endpoint
    }

    /// A webhook template's variant: `method` and `content_type` are fixed words, `path`, `body` and each of
    /// `headers` are Liquid (a header is the field `header.<Name>`).
    mutating func webhookVariant(_ fields: [(key: String, node: ConfigNode)], _ path: String) -> [String: TemplateText] {
        var texts: [String: TemplateText] = [:]
        for (name, value) in fields {
            switch name {
            case "method":
                guard let method = value.scalarText, WebhookRequestRules.methods.contains(method) else {
                    fail(value, "\(path).method: expected \(WebhookRequestRules.methods.joined(separator: ", ")), found \(value.scalarText ?? value.typeName)")
                    continue
                }
                texts[name] = TemplateText(literal: method)
            case "content_type":
                guard let type = value.scalarText, type.split(separator: "/").count == 2,
                    WebhookRequestRules.headerValueProblem(type) == nil, !type.contains(" /"), !type.hasPrefix(" ")
                else {
                    fail(value, "\(path).content_type: expected a media type such as application/json, found \(value.scalarText ?? value.typeName)")
                    continue
                }
                texts[name] = TemplateText(literal: type)
            case "headers":
                guard case .object(let members) = value.value else {
                    fail(value, "\(path).headers: expected a mapping of header names to texts, found \(value.typeName)")
                    continue
                }
                if members.count > WebhookRequestRules.maxHeaders {
                    fail(value, "\(path).headers: \(members.count), at most \(WebhookRequestRules.maxHeaders)")
                }
                for (header, headerValue) in members {
                    if let problem = WebhookRequestRules.headerNameProblem(header) {
                        fail(headerValue, "\(path).headers.\(header): \(problem)")
                        continue
                    }
                    guard let text = templateText(headerValue, "\(path).headers.\(header)") else { continue }
                    if let problem = WebhookRequestRules.headerValueProblem(text.fixedText) {
                        fail(headerValue, "\(path).headers.\(header): \(problem)")
                        continue
                    }
                    texts[WebhookRequestRules.headerPrefix + header] = text
                }
            default:
                guard let text = templateText(value, "\(path).\(name)") else { continue }
                if name == "path", text.isFixed, let problem = WebhookRequestRules.pathProblem(text.fixedText) {
                    fail(value, "\(path).path: \(problem)")
                    continue
                }
                texts[name] = text
            }
        }
        // A JSON body known whole when read must parse: refused now rather than failed at every send.
        let contentType = texts["content_type"]?.fixedText ?? WebhookRequestRules.defaultContentType
        if let body = texts["body"], body.isFixed, WebhookRequestRules.isJSON(contentType),
            (try? JSONParser.parse(Array(body.fixedText.utf8))) == nil
        {
            fail(fields.first { $0.key == "body" }?.node, "\(path).body: not JSON, and the content type is \(contentType)")
        }
        return texts
    }
}
