import Crypto
import Foundation
import NIOSSL
import SwiftASN1
import X509

/// A self-signed certificate for 127.0.0.1 and localhost, made in memory when a simulator starts: the APNs simulator
/// speaks HTTP/2 over TLS like APNs, and the notifier trusts it through `HERALD_PROVIDER_CA_FILE`.
package struct SimulatorTLS: Sendable {
    /// The certificate (PEM), which is also the CA a client trusts.
    package let certificatePEM: String
    package let context: NIOSSLContext

    package static func selfSigned() throws -> SimulatorTLS {
        let key = P256.Signing.PrivateKey()
        let name = try DistinguishedName {
            OrganizationName("Herald")
            CommonName("Herald provider simulator")
        }
        let now = Date()
        let certificate = try Certificate(
            version: .v3,
            serialNumber: .init(),
            publicKey: .init(key.publicKey),
            notValidBefore: now - 3600,
            notValidAfter: now + 365 * 86400,
            issuer: name,
            subject: name,
            signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.isCertificateAuthority(maxPathLength: 0))
                Critical(KeyUsage(digitalSignature: true, keyCertSign: true))
                SubjectAlternativeNames([.dnsName("localhost"), .ipAddress(ASN1OctetString(contentBytes: [127, 0, 0, 1]))])
            },
            issuerPrivateKey: .init(key))
        let certificatePEM = try certificate.serializeAsPEM().pemString
        var configuration = TLSConfiguration.makeServerConfiguration(
            certificateChain: [.certificate(try NIOSSLCertificate(bytes: Array(certificatePEM.utf8), format: .pem))],
            privateKey: .privateKey(try NIOSSLPrivateKey(bytes: Array(key.pemRepresentation.utf8), format: .pem)))
        configuration.applicationProtocols = ["h2"]
        return SimulatorTLS(certificatePEM: certificatePEM, context: try NIOSSLContext(configuration: configuration))
    }

    /// Writes the certificate where a client reads its CA file from.
    package func writeCertificate(to path: String) throws {
        try Data(certificatePEM.utf8).write(to: URL(fileURLWithPath: path), options: .atomic)
    }
}
