import CCurl

/// What the linked libcurl can do; APNs needs HTTP/2.
package enum CurlInfo {
    package static var version: String { String(cString: herald_curl_version()) }
    package static var supportsHTTP2: Bool { herald_curl_has_http2() != 0 }
    /// libcurl 7.x cannot reuse an HTTP/2 connection opened with prior knowledge (curl/curl#10634).
    package static let priorKnowledgeReuseBroken: Bool = (Int(version.split(separator: ".").first ?? "") ?? 0) < 8
}

/// The address guard's judgement of an address (`HTTPRequest.publicAddressesOnly`), for tests and diagnostics: true
/// when it is public, false when the guard refuses it, nil when the text is not an IP address.
package enum AddressGuard {
    package static func isPublic(_ address: String) -> Bool? {
        switch herald_address_text_is_private(address) {
        case 0: true
        case 1: false
        default: nil
        }
    }
}
