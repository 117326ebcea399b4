import Foundation
import NIOCore
import NIOExtras
import NIOPosix

/// An SMTP sink: speaks enough ESMTP for a real client (EHLO, AUTH, MAIL, RCPT, DATA with dot-unstuffing, RSET, NOOP,
/// QUIT), records each message, answers 550 to recipients marked invalid (a hard bounce) and the configured fault to
/// the others. No STARTTLS: clients connect with it off or optional.
package final class SMTPSink: Sendable {
    package let state: SimulatorState
    private let channel: any Channel
    package let port: Int

    package var url: String { "smtp://127.0.0.1:\(port)" }

    package static func start(state: SimulatorState, port: Int = 0, group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton)
        async throws -> SMTPSink
    {
        let bootstrap = ServerBootstrap(group: group)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandlers([
                        ByteToMessageHandler(LineBasedFrameDecoder()), SMTPSession(state: state),
                    ])
                }
            }
        let channel = try await bootstrap.bind(host: "127.0.0.1", port: port).get()
        return SMTPSink(state: state, channel: channel, port: channel.localAddress?.port ?? port)
    }

    private init(state: SimulatorState, channel: any Channel, port: Int) {
        self.state = state
        self.channel = channel
        self.port = port
    }

    package func stop() async { try? await channel.close() }
}

private final class SMTPSession: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    let state: SimulatorState
    private var from: String?
    private var recipients: [String] = []
    private var data: [String]?

    init(state: SimulatorState) { self.state = state }

    func channelActive(context: ChannelHandlerContext) {
        reply(context, "220 herald-smtp-sim ESMTP ready")
    }

    private func reply(_ context: ChannelHandlerContext, _ line: String) {
        context.writeAndFlush(wrapOutboundOut(ByteBuffer(string: line + "\r\n")), promise: nil)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var buffer = unwrapInboundIn(data)
        var line = buffer.readString(length: buffer.readableBytes) ?? ""
        if line.hasSuffix("\r") { line.removeLast() }
        if var lines = self.data {
            if line == "." {
                self.data = nil
                let message = lines.joined(separator: "\r\n")
                for recipient in recipients {
                    state.record(.init(provider: "smtp", target: recipient, headers: ["mail-from": from ?? ""], body: message, status: 250, at: Date()))
                }
                reset()
                reply(context, "250 2.0.0 OK queued")
            } else {
                lines.append(line.hasPrefix("..") ? String(line.dropFirst()) : line)
                self.data = lines
            }
            return
        }
        let verb = line.prefix { $0 != " " && $0 != ":" }.uppercased()
        switch verb {
        case "EHLO": reply(context, "250-herald-smtp-sim\r\n250-SIZE 10485760\r\n250-8BITMIME\r\n250 AUTH PLAIN LOGIN")
        case "HELO": reply(context, "250 herald-smtp-sim")
        case "AUTH": reply(context, "235 2.7.0 Authentication successful")
        case "MAIL":
            from = Self.address(line)
            reply(context, "250 2.1.0 OK")
        case "RCPT":
            let address = Self.address(line)
            if state.isInvalid(address) {
                state.record(.init(provider: "smtp", target: address, headers: [:], body: "", status: 550, at: Date()))
                reply(context, "550 5.1.1 <\(address)>: Recipient address rejected: User unknown")
                return
            }
            let fault = state.takeFault("smtp")
            if let fault, fault.status != 0 {
                state.record(.init(provider: "smtp", target: address, headers: [:], body: "", status: fault.status, at: Date()))
                reply(context, "\(fault.status) \(fault.reason ?? (fault.status >= 500 ? "5.7.1 refused" : "4.3.0 try again later"))")
                return
            }
            recipients.append(address)
            if fault?.held == true {
                // A server that answers when the test says so.
                let released = context.eventLoop.makePromise(of: Void.self)
                released.futureResult.assumeIsolated().whenSuccess { [self] in reply(context, "250 2.1.5 OK") }
                state.hold { released.succeed() }
            } else if let delay = fault?.delayMilliseconds, delay > 0 {
                // A slow server (a fault of status 0): the recipient is accepted, after the delay.
                context.eventLoop.assumeIsolated().scheduleTask(in: .milliseconds(Int64(delay))) { [self] in
                    reply(context, "250 2.1.5 OK")
                }
            } else {
                reply(context, "250 2.1.5 OK")
            }
        case "DATA":
            if recipients.isEmpty {
                reply(context, "554 5.5.1 No valid recipients")
            } else {
                self.data = []
                reply(context, "354 End data with <CR><LF>.<CR><LF>")
            }
        case "RSET":
            reset()
            reply(context, "250 2.0.0 OK")
        case "NOOP": reply(context, "250 2.0.0 OK")
        case "QUIT":
            context.writeAndFlush(wrapOutboundOut(ByteBuffer(string: "221 2.0.0 Bye\r\n"))).whenComplete { _ in context.close(promise: nil) }
        default: reply(context, "502 5.5.2 Command not recognized")
        }
    }

    private func reset() {
        from = nil
        recipients = []
    }

    /// `MAIL FROM:<a@b> SIZE=10` → `a@b`.
    static func address(_ line: String) -> String {
        guard let open = line.firstIndex(of: "<"), let close = line[open...].firstIndex(of: ">") else { return "" }
        return String(line[line.index(after: open)..<close])
    }
}
