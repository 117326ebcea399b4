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

    /// Runs `openssl` with these arguments (standard error to the file) and gives its exit status.
    package typealias OpenSSL = @Sendable (_ arguments: [String], _ errorsFile: String) async throws -> Int32

    /// `openssl` through Foundation's `Process`, awaited (its termination handler), for the `herald-simulators` process,
    /// once at its start with a handful of descriptors open. The tests pass their own runner instead (`runCommand`): in
    /// the test process a spawn must not carry an embedded broker's listener into the child, Foundation's dispatch
    /// sources once crashed it, and so did `Process.run()`'s walk of /proc/self/fd over hundreds of descriptors
    /// (swiftlang/swift-corelibs-foundation#5472; Tests/Support/Spawned.swift).
    package static let foundationOpenSSL: OpenSSL = { arguments, errorsFile in
        guard let errors = FileHandle(forWritingAtPath: errorsFile) else {
            throw CertificateNotMade(description: "cannot write \(errorsFile)")
        }
        defer { try? errors.close() }
        let openssl = Process()
        openssl.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        openssl.arguments = ["openssl"] + arguments
        openssl.standardOutput = FileHandle.nullDevice
        openssl.standardError = errors
        return try await withCheckedThrowingContinuation { exited in
            openssl.terminationHandler = { exited.resume(returning: $0.terminationStatus) }
            do {
                try openssl.run()
            } catch {
                openssl.terminationHandler = nil
                exited.resume(throwing: CertificateNotMade(description: "openssl could not be started (scripts/setup.sh installs it): \(error)"))
            }
        }
    }

    /// A new certificate and its key, made by `openssl` as `run` runs it. Awaited, not blocked on: the tests run on a
    /// pool as wide as the machine's cores, and a thread waiting for a process holds every other test's work meanwhile.
    package static func selfSigned(openssl run: OpenSSL = foundationOpenSSL) async throws -> SimulatorTLS {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("herald-tls-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let keyFile = directory.appendingPathComponent("key.pem").path
        let certificateFile = directory.appendingPathComponent("certificate.pem").path
        let errorsFile = directory.appendingPathComponent("errors.txt").path
        guard FileManager.default.createFile(atPath: errorsFile, contents: nil) else {
            throw CertificateNotMade(description: "cannot write \(errorsFile)")
        }
        let status = try await run(
            [
                "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                "-keyout", keyFile, "-out", certificateFile, "-days", "365",
                "-subj", "/O=Herald/CN=Herald provider simulator",
                "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1",
                "-addext", "basicConstraints=critical,CA:TRUE,pathlen:0",
                "-addext", "keyUsage=critical,digitalSignature,keyCertSign",
            ], errorsFile)
        guard status == 0 else {
            let said = (try? String(contentsOfFile: errorsFile, encoding: .utf8)) ?? ""
            throw CertificateNotMade(description: "openssl req exited with \(status): \(said)")
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
