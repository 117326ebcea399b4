import ArgumentParser
import Foundation
import Logging
import ProviderSimulators
import ServiceLifecycle
import UnixSignals

/// The provider simulators as one process, for the dev stack: APNs (HTTP/2 cleartext), the HTTP APIs (FCM with its
/// OAuth2 token endpoint, SMS, and the `/_sim` control API) and an SMTP sink, on loopback.
@main
struct SimulatorsMain: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "herald-simulators",
        abstract: "Local APNs, FCM, SMTP and SMS simulators that record what they receive and answer faults on demand.")

    @Option(help: "Port of the HTTP/1.1 simulators (FCM, OAuth2 token, SMS API, /_sim control).")
    var httpPort = 9100
    @Option(help: "Port of the APNs simulator (HTTP/2 with prior knowledge).")
    var apnsPort = 9101
    @Option(help: "Port of the SMTP sink.")
    var smtpPort = 9125
    @Option(help: "Address to listen on.")
    var host = "127.0.0.1"

    func run() async throws {
        let state = SimulatorState()
        let apns = try await APNsSimulator.start(state: state, port: apnsPort)
        let smtp = try await SMTPSink.start(state: state, port: smtpPort)
        let http = HTTPSimulators.application(state: state, host: host, port: httpPort) { port in
            FileHandle.standardOutput.write(
                Data(#"{"simulators":"listening","http":\#(port),"apns":\#(apns.port),"smtp":\#(smtp.port)}"#.utf8 + [10]))
        }
        let group = ServiceGroup(
            configuration: .init(services: [.init(service: http)], gracefulShutdownSignals: [.sigterm, .sigint], logger: .init(label: "herald.simulators")))
        try await group.run()
        await apns.stop()
        await smtp.stop()
    }
}
