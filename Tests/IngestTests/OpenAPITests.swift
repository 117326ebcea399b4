import Foundation
import HeraldTestSupport
import Hummingbird
import HummingbirdTesting
import Logging
import Shared
import Testing

@testable import Ingest

@Suite("docs/openapi.yaml stays true")
struct OpenAPITests {
    /// `METHOD /path` of every operation in the document (paths at two spaces, methods at four).
    static func documented() throws -> Set<String> {
        let text = try String(contentsOfFile: repositoryFile("docs/openapi.yaml"), encoding: .utf8)
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

    @Test("every route is documented, and every documented operation is a route")
    func routesMatch() throws {
        let router = Ingest.buildRouter(
            api: IngestAPI(catalog: try AppsCatalog.load(path: sampleAppsFile), sink: FakeSink(), maxBodyBytes: 1024, now: { Date() }))
        let served = Set(router.routes.map { "\($0.method) \($0.path)" }).union(["GET /health", "GET /health/live", "GET /health/ready", "GET /metrics"])
        let documented = try Self.documented()
        #expect(documented.count >= 13)
        #expect(served.subtracting(documented).isEmpty, "undocumented: \(served.subtracting(documented).sorted())")
        #expect(documented.subtracting(served).isEmpty, "documented, not served: \(documented.subtracting(served).sorted())")
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
