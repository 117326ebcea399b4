import Foundation
import NIOCore
import NIOHPACK
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
                let number = state.accepted("apns")
                if let tls {
                    do {
                        try channel.pipeline.syncOperations.addHandler(NIOSSLServerHandler(context: tls.context))
                    } catch {
                        return channel.eventLoop.makeFailedFuture(error)
                    }
                }
                // APNs allows 1000 concurrent streams. libcurl 7.88 with Debian 12's nghttp2 1.52 sends a RST_STREAM
                // after every response, on a stream already closed (nghttp2/nghttp2#2354, fixed in 2025); NIO's
                // rapid-reset guard (200 resets or stream errors in 30 s) would then close the connection every 200
                // pushes, failing the requests in flight. The simulator stands for APNs, not for that guard.
                var connection = NIOHTTP2Handler.ConnectionConfiguration()
                connection.initialSettings = [
                    HTTP2Setting(parameter: .maxConcurrentStreams, value: 1000),
                    HTTP2Setting(parameter: .maxHeaderListSize, value: HPACKDecoder.defaultMaxHeaderListSize),
                ]
                connection.maximumConnectionGlitches = Int.max
                var streams = NIOHTTP2Handler.StreamConfiguration()
                streams.streamResetFrameRateLimit.maximumCount = Int.max
                streams.streamErrorRateLimit.maximumCount = Int.max
                return channel.configureHTTP2Pipeline(
                    mode: .server, connectionConfiguration: connection, streamConfiguration: streams,
                    inboundStreamInitializer: { stream in
                    stream.eventLoop.makeCompletedFuture {
                        try stream.pipeline.syncOperations.addHandler(APNsStreamHandler(state: state, connection: number))
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

/// One HTTP/2 stream, on frames rather than through an HTTP/1 codec: like APNs, an answer without a body is a single
/// HEADERS frame with END_STREAM. (Through the HTTP/1 codec the end comes in a separate empty DATA frame; libcurl 7.88
/// then resets every stream it has finished reading, and NIO's rapid-reset guard closes the connection after 200.)
private final class APNsStreamHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTP2Frame.FramePayload
    typealias OutboundOut = HTTP2Frame.FramePayload

    let state: SimulatorState
    /// The connection's number (`SimulatorState.accepted`).
    let connection: Int
    private var headers: [String: String] = [:]
    private var method = ""
    private var path = ""
    private var body: [UInt8] = []
    private var answered = false

    init(state: SimulatorState, connection: Int) {
        self.state = state
        self.connection = connection
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .headers(let frame):
            for (name, value, _) in frame.headers {
                switch name {
                case ":method": method = value
                case ":path": path = value
                default: headers[name.lowercased()] = value
                }
            }
            if frame.endStream { respond(context: context) }
        case .data(let frame):
            if case .byteBuffer(var buffer) = frame.data { body += buffer.readBytes(length: buffer.readableBytes) ?? [] }
            if frame.endStream { respond(context: context) }
        default:
            break
        }
    }

    private func respond(context: ChannelHandlerContext) {
        guard !answered else { return }
        answered = true
        state.carried("apns", connection: connection)
        var (status, reason) = APNsSimulator.answer(method: method, path: path, headers: headers, body: body, state: state)
        var retryAfter: Int?
        var delay = 0
        var held = false
        if status == 200, let fault = state.takeFault("apns") {
            delay = fault.delayMilliseconds ?? 0
            held = fault.held == true
            if fault.status != 0 {
                status = fault.status
                reason = fault.reason ?? Self.defaultReason(fault.status)
                retryAfter = fault.retryAfter
            }
        }
        let token = path.hasPrefix("/3/device/") ? String(path.dropFirst("/3/device/".count)) : path
        state.record(.init(
            provider: "apns", target: token, headers: headers, body: String(decoding: body, as: UTF8.self), status: status,
            at: Date()))
        var responseHeaders = HPACKHeaders([(":status", String(status)), ("apns-id", headers["apns-id"] ?? UUID().uuidString.lowercased())])
        var payload = ByteBuffer()
        if let reason {
            let timestamp = status == 410 ? ",\"timestamp\":\(Int(Date().timeIntervalSince1970 * 1000))" : ""
            payload = ByteBuffer(string: "{\"reason\":\"\(reason)\"\(timestamp)}")
            responseHeaders.add(name: "content-type", value: "application/json")
            responseHeaders.add(name: "content-length", value: String(payload.readableBytes))
        }
        if let retryAfter { responseHeaders.add(name: "retry-after", value: String(retryAfter)) }
        let write = { [payload, responseHeaders] in
            let empty = payload.readableBytes == 0
            context.write(self.wrapOutboundOut(.headers(.init(headers: responseHeaders, endStream: empty))), promise: nil)
            if !empty { context.write(self.wrapOutboundOut(.data(.init(data: .byteBuffer(payload), endStream: true))), promise: nil) }
            context.flush()
        }
        if held {
            let released = context.eventLoop.makePromise(of: Void.self)
            released.futureResult.assumeIsolated().whenSuccess { write() }
            state.hold { released.succeed() }
        } else if delay > 0 {
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

