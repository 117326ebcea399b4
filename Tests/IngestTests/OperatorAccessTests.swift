import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import NIOEmbedded
import ServiceSupport
import Testing

/// The operator check of every service (`OperatorAuthMiddleware`, in ServiceSupport), on a context whose peer address
/// the test chooses.
@Suite("Operator endpoints: who may call them")
struct OperatorAccessTests {
    static func status(
        _ path: String, token: String?, peer: String, authorization: String? = nil
    ) async throws -> HTTPResponse.Status {
        let channel = EmbeddedChannel()
        channel.remoteAddress = try SocketAddress(ipAddress: peer, port: 40_000)
        let context = ServiceRequestContext(
            source: ApplicationRequestContextSource(channel: channel, logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })))
        var head = HTTPRequest(method: .get, scheme: "http", authority: "x", path: path)
        if let authorization { head.headerFields[.authorization] = authorization }
        let middleware = OperatorAuthMiddleware<ServiceRequestContext>(token: token, paths: ["/metrics", "/v1/"])
        let response = try await middleware.handle(Request(head: head, body: .init(buffer: ByteBuffer())), context: context) { _, _ in
            Response(status: .ok)
        }
        return response.status
    }

    @Test("without a token: this machine only (loopback, IPv4 and IPv6); another host is refused; public paths stay open")
    func loopbackOnlyWithoutToken() async throws {
        #expect(try await Self.status("/metrics", token: nil, peer: "127.0.0.1") == .ok)
        #expect(try await Self.status("/v1/profiles/demo/paul", token: nil, peer: "::1") == .ok)
        #expect(try await Self.status("/metrics", token: nil, peer: "10.0.0.7") == .forbidden)
        #expect(try await Self.status("/v1/profiles/demo/paul", token: nil, peer: "192.168.1.20") == .forbidden)
        #expect(try await Self.status("/v1/profiles/demo/paul", token: nil, peer: "2001:db8::1") == .forbidden)
        #expect(try await Self.status("/health/ready", token: nil, peer: "10.0.0.7") == .ok)
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
