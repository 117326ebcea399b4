import Foundation
import NIOSSL

/// A self-signed certificate for 127.0.0.1 and localhost, made when a simulator starts: the APNs simulator speaks
/// HTTP/2 over TLS like APNs, and the notifier trusts it through `HERALD_PROVIDER_CA_FILE`. The `openssl` command makes
/// it (scripts/setup.sh installs it): a package that builds certificates would be compiled for this one use.
package struct SimulatorTLS: Sendable {
    /// The certificate (PEM), which is also the CA a client trusts.
    package let certificatePEM: String
    package let context: NIOSSLContext

    package struct CertificateNotMade: Error, CustomStringConvertible {
        package let description: String
    }

    package static func selfSigned() throws -> SimulatorTLS {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("herald-tls-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let keyFile = directory.appendingPathComponent("key.pem").path
        let certificateFile = directory.appendingPathComponent("certificate.pem").path
        let openssl = Process()
        openssl.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        openssl.arguments = [
            "openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
            "-keyout", keyFile, "-out", certificateFile, "-days", "365",
            "-subj", "/O=Herald/CN=Herald provider simulator",
            "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1",
            "-addext", "basicConstraints=critical,CA:TRUE,pathlen:0",
            "-addext", "keyUsage=critical,digitalSignature,keyCertSign",
        ]
        let errors = Pipe()
        openssl.standardOutput = FileHandle.nullDevice
        openssl.standardError = errors
        do {
            try openssl.run()
        } catch {
            throw CertificateNotMade(description: "openssl could not be started (scripts/setup.sh installs it): \(error)")
        }
        let said = errors.fileHandleForReading.readDataToEndOfFile()
        openssl.waitUntilExit()
        guard openssl.terminationStatus == 0 else {
            throw CertificateNotMade(description: "openssl req: \(String(decoding: said, as: UTF8.self))")
        }
        let certificatePEM = try String(contentsOfFile: certificateFile, encoding: .utf8)
        var configuration = TLSConfiguration.makeServerConfiguration(
            certificateChain: [.certificate(try NIOSSLCertificate(bytes: Array(certificatePEM.utf8), format: .pem))],
            privateKey: .privateKey(try NIOSSLPrivateKey(file: keyFile, format: .pem)))
        configuration.applicationProtocols = ["h2"]
        return SimulatorTLS(certificatePEM: certificatePEM, context: try NIOSSLContext(configuration: configuration))
    }

    /// Writes the certificate where a client reads its CA file from.
    package func writeCertificate(to path: String) throws {
        try Data(certificatePEM.utf8).write(to: URL(fileURLWithPath: path), options: .atomic)
    }
}
