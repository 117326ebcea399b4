import CCurl

/// What the linked libcurl can do; APNs needs HTTP/2.
package enum CurlInfo {
    package static var version: String { String(cString: herald_curl_version()) }
    package static var supportsHTTP2: Bool { herald_curl_has_http2() != 0 }
    /// libcurl 7.x cannot reuse an HTTP/2 connection opened with prior knowledge (curl/curl#10634).
    package static let priorKnowledgeReuseBroken: Bool = (Int(version.split(separator: ".").first ?? "") ?? 0) < 8
}
