import Foundation
import NIOCore
import NIOHTTP1
import NIOHTTP2
import NIOPosix
import NIOSSL

/// An APNs-shaped HTTP/2 endpoint: `POST /3/device/<token>` with APNs' checks and error answers, faults on demand, and
/// every request recorded. Over TLS with ALPN `h2` (as APNs) when given a certificate, else over cleartext with prior
/// knowledge (h2c).
package final class APNsSimulator: Sendable {
    package let state: SimulatorState
    private let channel: any Channel
    package let port: Int

    package let tls: SimulatorTLS?

    package var url: String { "\(tls == nil ? "http" : "https")://127.0.0.1:\(port)" }

    package static func start(
        state: SimulatorState, port: Int = 0, tls: SimulatorTLS? = nil,
        group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton
    ) async throws -> APNsSimulator {
        let bootstrap = ServerBootstrap(group: group)
            .serverChannelOption(.backlog, value: 256)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(.socketOption(.tcp_nodelay), value: 1)
            .childChannelInitializer { channel in
                state.connected("apns")
                if let tls {
                    do {
                        try channel.pipeline.syncOperations.addHandler(NIOSSLServerHandler(context: tls.context))
                    } catch {
                        return channel.eventLoop.makeFailedFuture(error)
                    }
                }
                return channel.configureHTTP2Pipeline(mode: .server, inboundStreamInitializer: { stream in
                    stream.eventLoop.makeCompletedFuture {
                        try stream.pipeline.syncOperations.addHandlers([
                            HTTP2FramePayloadToHTTP1ServerCodec(), APNsStreamHandler(state: state),
                        ])
                    }
                }).map { _ in }
            }
        let channel = try await bootstrap.bind(host: "127.0.0.1", port: port).get()
        return APNsSimulator(state: state, channel: channel, port: channel.localAddress?.port ?? port, tls: tls)
    }

    private init(state: SimulatorState, channel: any Channel, port: Int, tls: SimulatorTLS?) {
        self.state = state
        self.tls = tls
        self.channel = channel
        self.port = port
    }

    package func stop() async { try? await channel.close() }

    /// APNs' answer to a request (status, JSON body), before faults.
    static func answer(method: String, path: String, headers: [String: String], body: [UInt8], state: SimulatorState)
        -> (status: Int, reason: String?)
    {
        guard method == "POST" else { return (405, "MethodNotAllowed") }
        guard path.hasPrefix("/3/device/") else { return (404, "BadPath") }
        let token = String(path.dropFirst("/3/device/".count))
        guard !token.isEmpty else { return (400, "MissingDeviceToken") }
        guard let auth = headers["authorization"], auth.hasPrefix("bearer "), auth.split(separator: ".").count == 3 else {
            return (403, "MissingProviderToken")
        }
        guard headers["apns-topic"]?.isEmpty == false else { return (400, "MissingTopic") }
        if let type = headers["apns-push-type"], !["alert", "background", "voip", "complication", "fileprovider", "mdm", "location", "liveactivity"].contains(type) {
            return (400, "InvalidPushType")
        }
        if let priority = headers["apns-priority"], !["5", "10", "1"].contains(priority) { return (400, "BadPriority") }
        if let collapse = headers["apns-collapse-id"], collapse.utf8.count > 64 { return (400, "BadCollapseId") }
        guard !body.isEmpty else { return (400, "PayloadEmpty") }
        guard body.count <= 4096 else { return (413, "PayloadTooLarge") }
        guard token.count == 64, token.allSatisfy(\.isHexDigit) else { return (400, "BadDeviceToken") }
        if state.isInvalid(token) { return (410, "Unregistered") }
        return (200, nil)
    }
}

private final class APNsStreamHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    let state: SimulatorState
    private var head: HTTPRequestHead?
    private var body: [UInt8] = []

    init(state: SimulatorState) { self.state = state }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head): self.head = head
        case .body(var buffer): body += buffer.readBytes(length: buffer.readableBytes) ?? []
        case .end: respond(context: context)
        }
    }

    private func respond(context: ChannelHandlerContext) {
        guard let head else { return }
        var headers: [String: String] = [:]
        for (name, value) in head.headers { headers[name.lowercased()] = value }
        var (status, reason) = APNsSimulator.answer(
            method: head.method.rawValue, path: head.uri, headers: headers, body: body, state: state)
        var retryAfter: Int?
        var delay = 0
        if status == 200, let fault = state.takeFault("apns") {
            delay = fault.delayMilliseconds ?? 0
            if fault.status != 0 {
                status = fault.status
                reason = fault.reason ?? Self.defaultReason(fault.status)
                retryAfter = fault.retryAfter
            }
        }
        let token = head.uri.hasPrefix("/3/device/") ? String(head.uri.dropFirst("/3/device/".count)) : head.uri
        state.record(.init(
            provider: "apns", target: token, headers: headers, body: String(decoding: body, as: UTF8.self), status: status,
            at: Date()))
        var responseHeaders = HTTPHeaders([("apns-id", headers["apns-id"] ?? UUID().uuidString.lowercased())])
        var payload = ByteBuffer()
        if let reason {
            let timestamp = status == 410 ? ",\"timestamp\":\(Int(Date().timeIntervalSince1970 * 1000))" : ""
            payload = ByteBuffer(string: "{\"reason\":\"\(reason)\"\(timestamp)}")
            responseHeaders.add(name: "content-type", value: "application/json")
        }
        if let retryAfter { responseHeaders.add(name: "retry-after", value: String(retryAfter)) }
        responseHeaders.add(name: "content-length", value: String(payload.readableBytes))
        let response = HTTPResponseHead(version: .http2, status: HTTPResponseStatus(statusCode: status), headers: responseHeaders)
        let write = { [payload] in
            context.write(self.wrapOutboundOut(.head(response)), promise: nil)
            if payload.readableBytes > 0 { context.write(self.wrapOutboundOut(.body(.byteBuffer(payload))), promise: nil) }
            context.writeAndFlush(self.wrapOutboundOut(.end(nil)), promise: nil)
        }
        if delay > 0 {
            context.eventLoop.assumeIsolated().scheduleTask(in: .milliseconds(Int64(delay))) { write() }
        } else {
            write()
        }
    }

    static func defaultReason(_ status: Int) -> String {
        switch status {
        case 429: "TooManyRequests"
        case 500: "InternalServerError"
        case 503: "ServiceUnavailable"
        case 410: "Unregistered"
        case 403: "InvalidProviderToken"
        default: "BadDeviceToken"
        }
    }
}
