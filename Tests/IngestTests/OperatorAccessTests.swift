import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import NIOEmbedded
import Prometheus
import ServiceSupport
import Testing

/// The operator check of every service (`OperatorAuthMiddleware` on the operator routes, in ServiceSupport), through
/// the responder a service serves, on a context whose peer address the test chooses.
@Suite("Operator endpoints: who may call them")
struct OperatorAccessTests {
    /// The status a service's responder (`ServiceMain.responder`, what every service serves) answers for `path`, with
    /// `/metrics` and an operator read at `v1/profiles/:project/:custom_id` (200 "secret"), and a public route.
    static func status(
        _ path: String, token: String?, peer: String, authorization: String? = nil, method: HTTPRequest.Method = .get,
        host: String? = "127.0.0.1:8081"
    ) async throws -> HTTPResponse.Status {
        let channel = EmbeddedChannel()
        channel.remoteAddress = try SocketAddress(ipAddress: peer, port: 40_000)
        let context = ServiceRequestContext(
            source: ApplicationRequestContextSource(channel: channel, logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })))
        var head = HTTPRequest(method: method, scheme: "http", authority: host, path: path)
        if let authorization { head.headerFields[.authorization] = authorization }
        let router = Router(context: ServiceRequestContext.self)
        router.post("v1/app/events") { _, _ in "public" }
        let responder = ServiceMain.responder(
            router: router, operatorToken: token, registry: PrometheusCollectorRegistry(), service: "test", checks: []
        ) { reads in
            reads.get("v1/profiles/:project/:custom_id") { _, _ in "secret" }
        }
        return try await responder.respond(to: Request(head: head, body: .init(buffer: ByteBuffer())), context: context).status
    }

    /// Spellings of the operator paths: the router matches some of them to the operator routes (empty segments, a
    /// trailing slash, a query), others to nothing.
    static let spellings = [
        "/metrics", "//metrics", "/metrics/", "///metrics//", "/metrics?x=1", "/./metrics", "/metrics/.", "/x/../metrics",
        "/METRICS", "/Metrics", "/%6Detrics", "/metrics%2F", "/v1/profiles/demo/x", "//v1/profiles/demo/x",
        "/v1//profiles/demo/x", "/v1/profiles/demo/x/", "/v1/profiles//demo//x//", "/v1%2Fprofiles/demo/x",
        "/v1/profiles%2Fdemo%2Fx", "/v1/profiles/../profiles/demo/x", "/v1/app/../profiles/demo/x", "/V1/PROFILES/demo/x",
        "/v1/profiles/demo/x#frag",
    ]

    @Test("no spelling of an operator path reaches it without the token; those the router matches need it", arguments: spellings)
    func spelling(path: String) async throws {
        let token = "operator-token-0123456789"
        let withToken = try await Self.status(path, token: token, peer: "10.0.0.7", authorization: "Bearer \(token)")
        let without = try await Self.status(path, token: token, peer: "10.0.0.7")
        let fromLoopback = try await Self.status(path, token: token, peer: "127.0.0.1")
        #expect(without != .ok && fromLoopback != .ok)
        if withToken == .ok {
            // The router reaches an operator route with this spelling: the check is part of it.
            #expect(without == .unauthorized && fromLoopback == .unauthorized)
        } else {
            #expect(without == withToken, "a spelling that reaches nothing answers the same with or without the token")
        }
        // Without a token configured, another host gets nothing either.
        #expect(try await Self.status(path, token: nil, peer: "10.0.0.7") != .ok)
    }

    @Test("the spellings the router does match are checked (the test above is not vacuous)")
    func matchedSpellings() async throws {
        let token = "operator-token-0123456789"
        for path in ["//metrics", "/metrics/", "//v1/profiles/demo/x", "/v1/profiles/demo/x/"] {
            #expect(try await Self.status(path, token: token, peer: "10.0.0.7", authorization: "Bearer \(token)") == .ok, "\(path)")
        }
    }

    @Test("without a token: this machine only (loopback, IPv4 and IPv6); another host is refused; public paths stay open")
    func loopbackOnlyWithoutToken() async throws {
        #expect(try await Self.status("/metrics", token: nil, peer: "127.0.0.1") == .ok)
        #expect(try await Self.status("/v1/profiles/demo/paul", token: nil, peer: "::1") == .ok)
        #expect(try await Self.status("/metrics", token: nil, peer: "10.0.0.7") == .forbidden)
        #expect(try await Self.status("/v1/profiles/demo/paul", token: nil, peer: "192.168.1.20") == .forbidden)
        #expect(try await Self.status("/v1/profiles/demo/paul", token: nil, peer: "2001:db8::1") == .forbidden)
        #expect(try await Self.status("/health/ready", token: nil, peer: "10.0.0.7") == .ok)
        #expect(try await Self.status("/v1/app/events", token: nil, peer: "10.0.0.7", method: .post) == .ok)
    }

    /// DNS rebinding: a page of another site, resolved to 127.0.0.1 in a browser on this machine, reaches the port from
    /// loopback, but names its own site in `Host`. Without a token that is refused; the machine's own tools name
    /// localhost or a loopback address.
    @Test(
        "without a token, a loopback peer whose Host names another site is refused",
        arguments: [
            ("rebind.attacker.example", false), ("rebind.attacker.example:8081", false), ("127.0.0.1.nip.io", false),
            ("localhost.attacker.example", false), ("10.0.0.7:8081", false), ("[2001:db8::1]:8081", false), ("[::1", false),
            ("127.0.0.1:8081", true), ("127.0.0.1", true), ("127.8.9.10:80", true), ("localhost:8081", true),
            ("LOCALHOST", true), ("localhost.:8081", true), ("[::1]:8081", true), ("[::1]", true), (nil, true),
        ] as [(String?, Bool)])
    func rebinding(host: String?, allowed: Bool) async throws {
        for path in ["/metrics", "/v1/profiles/demo/paul"] {
            let status = try await Self.status(path, token: nil, peer: "127.0.0.1", host: host)
            #expect(status == (allowed ? .ok : .forbidden), "\(path) with Host \(host ?? "(none)")")
        }
        // With a token the Host is not what decides: the token is.
        let token = "operator-token-0123456789"
        #expect(try await Self.status("/metrics", token: token, peer: "127.0.0.1", authorization: "Bearer \(token)", host: host) == .ok)
        // Public paths do not look at it.
        #expect(try await Self.status("/v1/app/events", token: nil, peer: "127.0.0.1", method: .post, host: host) == .ok)
    }

    @Test("with a token: the token from anywhere, loopback included; nothing without it")
    func tokenEverywhere() async throws {
        let token = "operator-token-0123456789"
        #expect(try await Self.status("/metrics", token: token, peer: "10.0.0.7", authorization: "Bearer \(token)") == .ok)
        #expect(try await Self.status("/metrics", token: token, peer: "127.0.0.1") == .unauthorized)
        #expect(try await Self.status("/metrics", token: token, peer: "10.0.0.7", authorization: "Bearer nope") == .unauthorized)
        // Read as the ingest reads its REST keys (one `HTTPFields.bearerToken`): the scheme in any case, spaces around.
        #expect(try await Self.status("/metrics", token: token, peer: "10.0.0.7", authorization: "bearer  \(token) ") == .ok)
        #expect(try await Self.status("/metrics", token: token, peer: "10.0.0.7", authorization: "Bearer\(token)") == .unauthorized)
    }

    @Test(
        "Authorization: Bearer, read once for every service",
        arguments: [
            ("Bearer abc", "abc"), ("bearer abc", "abc"), ("BEARER   abc  ", "abc"), ("Bearer", nil), ("Bearer ", nil),
            ("Bearerabc", nil), ("Basic abc", nil), (nil, nil),
        ] as [(String?, String?)])
    func bearerToken(header: String?, token: String?) {
        var fields = HTTPFields()
        if let header { fields[.authorization] = header }
        #expect(fields.bearerToken == token)
    }
}
