import Foundation
import HTTPTypes
import HeraldTestSupport
import Hummingbird
import HummingbirdTesting
import Logging
import ServiceSupport
import Shared
import Testing

@testable import Ingest

@Suite("docs/openapi.yaml stays true")
struct OpenAPITests {
    /// `METHOD /path` of every operation in a document (paths at two spaces, methods at four).
    static func documented(_ document: String = "docs/openapi.yaml") throws -> Set<String> {
        let text = try String(contentsOfFile: repositoryFile(document), encoding: .utf8)
        var operations: Set<String> = []
        var path: String?
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix("  /"), line.hasSuffix(":") {
                path = String(line.dropFirst(2).dropLast())
            } else if line.hasPrefix("  "), !line.hasPrefix("   ") {
                path = nil
            } else if let current = path, line.hasPrefix("    "), !line.hasPrefix("     ") {
                let method = line.trimmingCharacters(in: .whitespaces).dropLast()
                if ["get", "post", "put", "patch", "delete"].contains(String(method)) {
                    operations.insert("\(method.uppercased()) \(current)")
                }
            }
        }
        return operations
    }

    @Test("every route is documented (Herald's own in openapi.yaml, Braze's and Segment's in compatibility-openapi.yaml), and every documented operation is a route")
    func routesMatch() throws {
        let router = Ingest.buildRouter(
            api: IngestAPI(catalog: try AppsCatalog.load(path: sampleAppsFile), sink: FakeSink(), maxBodyBytes: 1024, now: { Date() }))
        let served = Set(router.routes.map { "\($0.method) \($0.path)" }).union(["GET /health", "GET /health/live", "GET /health/ready", "GET /metrics"])
        let own = try Self.documented(), compatibility = try Self.documented("docs/compatibility-openapi.yaml")
        #expect(own.count >= 13 && compatibility.count == 11)
        #expect(own.isDisjoint(with: compatibility))
        let documented = own.union(compatibility)
        #expect(served.subtracting(documented).isEmpty, "undocumented: \(served.subtracting(documented).sorted())")
        #expect(documented.subtracting(served).isEmpty, "documented, not served: \(documented.subtracting(served).sorted())")
    }
}

@Suite("docs/openapi.yaml's generated lists")
struct OpenAPIListTests {
    static let document = try! String(contentsOfFile: repositoryFile("docs/openapi.yaml"), encoding: .utf8)

    /// The text of `schema`'s `key:` line, its YAML escapes (`\\`) undone.
    static func value(_ key: String, of schema: String) throws -> String {
        let lines = document.split(separator: "\n").map(String.init)
        let start = try #require(lines.firstIndex(of: "    \(schema):"), "\(schema) is not in the document")
        let line = try #require(lines[(start + 1)...].first { $0.hasPrefix("      \(key): ") }, "\(schema).\(key)")
        return String(line.dropFirst("      \(key): ".count)).trimmingCharacters(in: .init(charactersIn: "\"")).replacingOccurrences(of: "\\\\", with: "\\")
    }

    /// Every two-letter pair in three casings against the schema's pattern and the ingest's rule.
    @Test("Language and Region match exactly the codes the ingest accepts, in any case", arguments: ["Language", "Region"])
    func codes(schema: String) throws {
        let pattern = try NSRegularExpression(pattern: try Self.value("pattern", of: schema))
        let letters = "abcdefghijklmnopqrstuvwxyz"
        var checked = 0
        for first in letters {
            for second in letters {
                for text in ["\(first)\(second)", "\(first)\(second)".uppercased(), "\(first.uppercased())\(second)"] {
                    let documented = pattern.firstMatch(in: text, range: NSRange(text.startIndex..., in: text)) != nil
                    let accepted = schema == "Language" ? (try? Rules.language(text)) != nil : (try? Rules.region(text)) != nil
                    #expect(documented == accepted, "\(schema) \(text)")
                    checked += 1
                }
            }
        }
        #expect(checked == 2028)
    }

    @Test("TimeZone lists exactly the names the ingest accepts")
    func timeZones() throws {
        let lines = Self.document.split(separator: "\n").map(String.init)
        let start = try #require(lines.firstIndex(of: "    TimeZone:"))
        let open = try #require(lines[start...].firstIndex(of: "      enum: ["))
        let close = try #require(lines[open...].firstIndex(of: "      ]"))
        let names = lines[(open + 1)..<close].flatMap { $0.split(separator: ",") }
            .map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        #expect(Set(names) == ianaTimeZones)
        #expect(names.count == ianaTimeZones.count)
    }
}

@Suite("Methods a path does not take")
struct MethodNotAllowedTests {
    @Test("405 with Allow for a method a path does not take (templates match any id); 404 for a path that does not exist")
    func methodNotAllowed() async throws {
        let router = Ingest.buildRouter(
            api: IngestAPI(catalog: try AppsCatalog.load(path: sampleAppsFile), sink: FakeSink(), maxBodyBytes: 1024, now: { Date() }))
        let responder = MethodNotAllowedResponder(
            inner: router.buildResponder(), routes: router.routes.map { ("\($0.path)", $0.method) })
        let app = Application(responder: responder, logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }))
        try await app.test(.router) { client in
            for (method, uri, status, allow) in [
                (HTTPRequest.Method.trace, "/v1/app/events", 405, "POST"),
                // The concrete path wins over the template (OpenAPI's rule): the profile whose custom ID is "update"
                // is deleted percent-encoded.
                (.get, "/v1/profiles/update", 405, "POST"),
                (.delete, "/v1/profiles/update", 405, "POST"),
                (.put, "/v1/profiles/paul", 405, "DELETE"),
                (.get, "/v1/nothing-here", 404, nil),
            ] as [(HTTPRequest.Method, String, Int, String?)] {
                try await client.execute(uri: uri, method: method) { response in
                    #expect(response.status.code == status, "\(method) \(uri)")
                    #expect(response.headers[.allow] == allow, "\(method) \(uri)")
                }
            }
            // The method the path takes still reaches its route.
            try await client.execute(uri: "/v1/app/events", method: .post) { #expect($0.status == .unauthorized) }
            try await client.execute(uri: "/v1/profiles/%75pdate", method: .delete) { #expect($0.status == .unauthorized) }
        }
    }
}

@Suite("Request logs")
struct RequestLogTests {
    @Test("one line per request with the route template, status and request id; no custom ID, key or body")
    func requestLog() async throws {
        let lines = Locked<[String]>([])
        let sink = LogSink { line in lines.withLock { $0.append(line) } }
        let router = Ingest.buildRouter(
            api: IngestAPI(catalog: try AppsCatalog.load(path: sampleAppsFile), sink: FakeSink(), maxBodyBytes: 1 << 20, now: { Date() }))
        let app = Application(
            router: router,
            logger: Logger(label: "test") { JSONLogHandler(label: $0, service: "ingest", level: .info, sink: sink) })
        try await app.test(.router) { client in
            try await client.execute(
                uri: "/v1/profiles/paul.secret%40example.com", method: .delete,
                headers: [.authorization: "Bearer rest_demo_0123456789abcdef"]
            ) { response in
                #expect(response.status == .ok)
            }
        }
        let requestLines = lines.withLock { $0 }.filter { $0.contains("\"msg\":\"request\"") }
        #expect(requestLines.count == 1)
        let line = try #require(requestLines.first)
        #expect(line.contains(#""route":"/v1/profiles/{custom_id}""#))
        #expect(line.contains(#""status":200"#))
        #expect(line.contains(#""request_id":""#))
        #expect(!line.contains("paul"))
        #expect(!line.contains("rest_demo"))
    }
}
