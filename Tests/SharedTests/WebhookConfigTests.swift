import Foundation
import Shared
import Testing

/// Webhook endpoints and templates (issue 61, item 1): what `herald config validate` refuses, and the apps file's
/// secrets.
@Suite("Configuration: webhooks")
struct WebhookConfigTests {
    static let project = #"{"kind":"project","id":"demo"}"#
    static let endpoint = #"{"kind":"webhook_endpoint","id":"crm","project":"demo","url":"https://crm.example.com/hooks","headers":{"X-Shop":"demo"}}"#

    static func endpoint(_ fields: String) -> String { #"{"kind":"webhook_endpoint","id":"e","project":"demo",\#(fields)}"# }

    static func template(_ variant: String, id: String = "bad") -> String {
        #"{"kind":"template","id":"\#(id)","project":"demo","channel":"webhook","variants":{"default":\#(variant)}}"#
    }

    static func campaign(_ message: String) -> String {
        #"{"kind":"campaign","id":"c","project":"demo","trigger":{"event":"PURCHASED"},"messages":[\#(message)]}"#
    }

    static let good = template(#"{"path":"/orders/{{ c.custom_id | url_encode }}","body":"{\"id\": {{ c.custom_id | json }} }"}"#, id: "t")

    @Test(
        "every problem of an endpoint, a webhook template and a webhook message is named",
        arguments: [
            (endpoint(#""url":"ftp://crm.example.com""#), "url: expected an https:// URL, such as https://crm.example.com/hooks"),
            (endpoint(#""url":"https://user:pw@crm.example.com""#), "url: credentials in the URL would travel with every call: use `headers`"),
            (endpoint(#""url":"https://crm.example.com/h?x=1""#), "url: no query or fragment (a template's `path` may add a query)"),
            (endpoint(#""url":"https://crm.example.com","headers":{"Webhook-Signature":"x"}"#),
             "headers.Webhook-Signature: Webhook-Signature is set by Herald (the signature's and the connection's headers)"),
            (endpoint(#""url":"https://crm.example.com","headers":{"X-A":"a\nb"}"#), "headers.X-A: a line break in a header"),
            (endpoint(#""url":"https://crm.example.com","headers":{"X A":"a"}"#),
             #"headers.X A: "X A" is not an HTTP header name (letters, digits and !#$%&'*+-.^_`|~)"#),
            (template(#"{"method":"GET"}"#), "variants.default.method: expected POST, PUT, PATCH, DELETE, found GET"),
            (template(#"{"path":"orders"}"#), #"variants.default.path: starts with "/" or "?" (it follows the endpoint's URL)"#),
            (template(#"{"path":"/a/../admin"}"#), #"variants.default.path: a ".." segment would leave the endpoint's path"#),
            (template(#"{"path":"/a/%2E%2E/admin"}"#), #"variants.default.path: a ".." segment would leave the endpoint's path"#),
            (template(##"{"path":"/a#frag"}"##), ##"variants.default.path: holds "#" (percent-encode it, with url_encode)"##),
            (template(#"{"body":"{not json"}"#), "variants.default.body: not JSON, and the content type is application/json"),
            (template(#"{"content_type":"json"}"#), "variants.default.content_type: expected a media type such as application/json, found json"),
            (template(#"{"headers":{"Content-Type":"text/plain"}}"#), "variants.default.headers.Content-Type: Content-Type is set by Herald (use `content_type`)"),
            (template(#"{"headers":{"Host":"{{ c.custom_id }}"}}"#),
             "variants.default.headers.Host: Host is set by Herald (the signature's and the connection's headers)"),
            (template(#"{"title":"x"}"#), "variants.default.title: not a field of webhook messages (body, path, method, content_type, headers)"),
            (campaign(#"{"channel":"webhook","template":"t"}"#), "messages[0]: missing `endpoint` (the webhook_endpoint it calls)"),
            (campaign(#"{"channel":"webhook","template":"t","endpoint":"erp"}"#), "campaign c: messages[0].endpoint: no webhook_endpoint erp in project demo"),
            (campaign(#"{"channel":"push","template":"t","endpoint":"crm"}"#), "messages[0].endpoint: only a webhook message calls an endpoint"),
            (#"{"kind":"project","id":"p2","frequency_caps":[{"max":1,"per":"1d","channel":"webhook"}]}"#,
             #"frequency_caps[0].channel: expected push, email or sms (webhooks are never capped), found "webhook""#),
        ])
    func problems(object: String, expected: String) throws {
        let (_, issues) = try readConfiguration([Self.project, Self.endpoint, Self.good, object])
        #expect(issues.contains(expected), "\(issues)")
    }

    @Test("an endpoint, a template with its headers as fields and a campaign that calls the endpoint are read")
    func reads() throws {
        let template = Self.template(
            #"{"method":"PUT","path":"/u/{{ c.custom_id | url_encode }}","content_type":"application/vnd.crm+json","headers":{"X-Campaign":"{{ campaign.name }}"},"body":"{}"}"#,
            id: "t")
        let (config, issues) = try readConfiguration([
            Self.project, Self.endpoint, template, Self.campaign(#"{"channel":"webhook","template":"t","endpoint":"crm"}"#),
        ])
        #expect(issues.isEmpty, "\(issues)")
        #expect(config.webhookEndpoints["demo/crm"]?.url == "https://crm.example.com/hooks")
        #expect(config.webhookEndpoints["demo/crm"]?.headers == ["X-Shop": "demo"])
        let fields = try #require(config.templates["demo/t"]?.variants["default"])
        #expect(Set(fields.keys) == ["method", "path", "content_type", "header.X-Campaign", "body"])
        #expect(config.campaigns["demo/c"]?.messages.first?.endpoint == "crm")
    }

    @Test("a path is one below the endpoint's: its rule, and the URL it makes")
    func paths() {
        #expect(WebhookRequestRules.pathProblem("") == nil && WebhookRequestRules.pathProblem("/a/b?c=d%20e") == nil)
        #expect(WebhookRequestRules.pathProblem("?x=1") == nil && WebhookRequestRules.pathProblem("/a/./b") != nil)
        #expect(WebhookRequestRules.pathProblem("/a b") != nil && WebhookRequestRules.pathProblem("/é") != nil)
        #expect(WebhookRequestRules.pathProblem(#"/a\b"#) != nil && WebhookRequestRules.pathProblem("@evil.com") != nil)
        #expect(WebhookRequestRules.url(endpoint: "https://h/hooks/", path: "/x") == "https://h/hooks/x")
        #expect(WebhookRequestRules.url(endpoint: "https://h/hooks", path: "?a=1") == "https://h/hooks?a=1")
        #expect(WebhookRequestRules.isJSON("application/json; charset=utf-8") && WebhookRequestRules.isJSON("application/cloudevents+json"))
        #expect(!WebhookRequestRules.isJSON("text/plain"))
    }

    @Test(
        "the apps file's webhook secrets: whsec_ and 24 to 64 bytes, one to three, each endpoint once",
        arguments: [
            (#"[{"endpoint":"crm","secrets":["whsec_short"]}]"#, "projects[0].webhooks[0].secrets[0]: expected whsec_ and the base64 of 24 to 64 random bytes (e.g. whsec_$(openssl rand -base64 32))"),
            (#"[{"endpoint":"crm","secrets":["MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"]}]"#, "projects[0].webhooks[0].secrets[0]: expected whsec_ and the base64 of 24 to 64 random bytes (e.g. whsec_$(openssl rand -base64 32))"),
            (#"[{"endpoint":"crm","secrets":[]}]"#, "projects[0].webhooks[0].secrets: one to three secrets (two while one is rotated out)"),
            (#"[{"endpoint":"crm","secrets":["whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"]},{"endpoint":"crm","secrets":["whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"]}]"#,
             #"projects[0].webhooks[1].endpoint: endpoint "crm" is listed twice"#),
            (#"[{"endpoint":"crm","secrets":["whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"],"private_network":"yes"}]"#,
             "projects[0].webhooks[0].private_network: expected true or false"),
        ])
    func secrets(webhooks: String, expected: String) {
        let file = #"{"projects":[{"id":"demo","rest_api_keys":["rest_0123456789abcdef"],"apps":[],"webhooks":\#(webhooks)}]}"#
        do {
            _ = try AppsCatalog.parse(Array(file.utf8))
            Issue.record("accepted \(webhooks)")
        } catch {
            #expect(error.description == expected)
        }
    }
}
