import ArgumentParser
import Foundation
import Logging
import ProviderSimulators
import ServiceLifecycle
import UnixSignals

/// The provider simulators as one process, for the dev stack: APNs (HTTP/2, over TLS with a self-signed certificate
/// when `--apns-certificate-file` says where to write it, else cleartext), the HTTP APIs (FCM with its
/// OAuth2 token endpoint, SMS, a webhook receiver, and the `/_sim` control API) and an SMTP sink, on loopback.
@main
struct SimulatorsMain: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "herald-simulators",
        abstract: "Local APNs, FCM, SMTP and SMS simulators that record what they receive and answer faults on demand.")

    @Option(help: "Port of the HTTP/1.1 simulators (FCM, OAuth2 token, SMS API, /_sim control).")
    var httpPort = 9100
    @Option(help: "Port of the APNs simulator.")
    var apnsPort = 9101
    @Option(help: ArgumentHelp(
        "Serve APNs over TLS with a new self-signed certificate for 127.0.0.1, written to this file (the notifier's HERALD_PROVIDER_CA_FILE); without it, HTTP/2 cleartext with prior knowledge.",
        valueName: "path"))
    var apnsCertificateFile: String?
    @Option(help: "Port of the SMTP sink.")
    var smtpPort = 9125
    @Option(help: "Address to listen on.")
    var host = "127.0.0.1"
    @Option(help: ArgumentHelp(
        "A secret (whsec_…) the webhook receiver (/hooks/<name>) checks signatures with; repeat for several. Without one it checks nothing.",
        valueName: "secret"))
    var webhookSecret: [String] = []

    func run() async throws {
        let state = SimulatorState()
        state.webhookSecrets = webhookSecret
        var tls: SimulatorTLS?
        if let apnsCertificateFile {
            let made = try await SimulatorTLS.selfSigned()
            try made.writeCertificate(to: apnsCertificateFile)
            tls = made
        }
        let apns = try await APNsSimulator.start(state: state, port: apnsPort, tls: tls)
        let smtp = try await SMTPSink.start(state: state, port: smtpPort)
        let http = HTTPSimulators.application(state: state, host: host, port: httpPort) { port in
            FileHandle.standardOutput.write(
                Data(#"{"simulators":"listening","http":\#(port),"apns":"\#(apns.url)","smtp":\#(smtp.port)}"#.utf8 + [10]))
        }
        let group = ServiceGroup(
            configuration: .init(services: [.init(service: http)], gracefulShutdownSignals: [.sigterm, .sigint], logger: .init(label: "herald.simulators")))
        try await group.run()
        await apns.stop()
        await smtp.stop()
    }
}
