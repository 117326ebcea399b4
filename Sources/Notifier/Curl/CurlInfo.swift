import CCurl

/// What the linked libcurl can do; APNs needs HTTP/2.
enum CurlInfo {
    static var version: String { String(cString: herald_curl_version()) }
    static var supportsHTTP2: Bool { herald_curl_has_http2() != 0 }
}
