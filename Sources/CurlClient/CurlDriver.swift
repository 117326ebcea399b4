import CCurl
import Foundation
import Shared
import Synchronization

/// An HTTP request for a provider.
package struct HTTPRequest: Sendable {
    package var method = "POST"
    package var url: String
    package var headers: [(String, String)] = []
    package var body: [UInt8] = []
    /// The whole transfer, connection included.
    package var timeout: Duration = Self.defaultTimeout
    package static let defaultTimeout: Duration = .seconds(10)
    /// HTTP/2 (APNs): multiplexed on one connection; over `http://` with prior knowledge (h2c), as the simulator and
    /// h2load speak it.
    package var http2 = false
    /// Basic authentication.
    package var user: String? = nil
    package var password: String? = nil
    /// Calls to a customer's endpoint (webhooks): only public addresses, checked after DNS resolution on every
    /// connection opened (a redirect's included) and again before a request goes over a reused one; no proxy from the
    /// environment; only `protocols`. A refused address fails the transfer with `TransferError.addressRefused`.
    package var publicAddressesOnly = false
    /// Redirects followed (0: none); each one's connection goes through the guard when it is on.
    package var maxRedirects = 0
    /// The schemes the URL and its redirects may use (libcurl's list, e.g. `https` or `http,https`).
    package var protocols = "http,https"

    package init(
        method: String = "POST", url: String, headers: [(String, String)] = [], body: [UInt8] = [],
        timeout: Duration = Self.defaultTimeout, http2: Bool = false, user: String? = nil, password: String? = nil
    ) {
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
        self.timeout = timeout
        self.http2 = http2
        self.user = user
        self.password = password
    }
}

/// An SMTP transaction: envelope and message, through libcurl's SMTP client.
package struct SMTPRequest: Sendable {
    /// `smtp://host:port` or `smtps://host:port`.
    package var url: String
    package var from: String
    package var recipients: [String]
    /// The whole message (headers and body, CRLF line ends).
    package var message: [UInt8]
    package var user: String? = nil
    package var password: String? = nil
    /// STARTTLS on `smtp://`: required, attempted, or off.
    package var startTLS: StartTLS = .attempt
    package var timeout: Duration = .seconds(30)

    package enum StartTLS: String, Sendable, CaseIterable { case required, attempt, off }

    package init(
        url: String, from: String, recipients: [String], message: [UInt8], user: String? = nil, password: String? = nil,
        startTLS: StartTLS = .attempt, timeout: Duration = .seconds(30)
    ) {
        self.url = url
        self.from = from
        self.recipients = recipients
        self.message = message
        self.user = user
        self.password = password
        self.startTLS = startTLS
        self.timeout = timeout
    }
}

/// What a transfer gave: the status (HTTP status, or the last SMTP reply code), headers (names lowercased) and body.
package struct TransferResponse: Sendable {
    package var status: Int
    package var headers: [String: String]
    package var body: [UInt8]
    /// Wall time of the transfer.
    package var duration: Duration

    package init(status: Int, headers: [String: String], body: [UInt8], duration: Duration) {
        self.status = status
        self.headers = headers
        self.body = body
        self.duration = duration
    }

    package func header(_ name: String) -> String? { headers[name.lowercased()] }
}

/// A transfer that did not complete: curl's code and message (connection refused, timeout, TLS…). `status` is the
/// last reply code when the server answered but the transfer failed (an SMTP 550 to RCPT TO).
package struct TransferError: Error, Sendable, CustomStringConvertible {
    package var code: Int
    package var message: String
    package var status: Int
    package var timedOut: Bool { code == Int(CURLE_OPERATION_TIMEDOUT.rawValue) }
    /// The address guard refused the endpoint's address (`HTTPRequest.publicAddressesOnly`).
    package var addressRefused: Bool { code == Self.addressRefusedCode }
    /// A redirect past `HTTPRequest.maxRedirects`, or to a scheme not in `protocols`: the same again would end the same.
    package var redirectRefused: Bool {
        code == Int(CURLE_TOO_MANY_REDIRECTS.rawValue) || code == Int(CURLE_UNSUPPORTED_PROTOCOL.rawValue)
    }
    package static let addressRefusedCode = -2
    package var description: String { status > 0 ? "\(message) (curl \(code), reply \(status))" : "\(message) (curl \(code))" }

    package init(code: Int, message: String, status: Int) {
        self.code = code
        self.message = message
        self.status = status
    }
}

/// Every provider call goes through one libcurl multi handle driven by one thread: HTTP/2 requests to the same host
/// share a connection (multiplexed streams), HTTP/1.1 and SMTP connections are kept and reused, and no Swift task ever
/// blocks on I/O. Callers `await` their transfer; bounding concurrency per provider is the caller's job.
package final class CurlDriver: @unchecked Sendable {
    /// How much of an answer's body is kept: providers answer a few hundred bytes (an error's JSON); whoever answers in
    /// their place (a proxy, a captive portal, an attacker on a plain-HTTP simulator URL) cannot make it more.
    package static let maxResponseBytes = 64 * 1024

    private struct State {
        var incoming: [Transfer] = []
        var stopping = false
    }

    private let multi: UnsafeMutableRawPointer
    private let state = Mutex(State())
    /// Transfers added to the multi handle; touched by the driver thread only.
    private var running: [UnsafeMutableRawPointer: Transfer] = [:]
    private var thread: Thread?
    private let stopped = DispatchSemaphore(value: 0)
    /// A PEM bundle that replaces the system's CA certificates for every TLS connection (a private CA, a TLS-inspecting
    /// proxy, the simulators' self-signed certificate).
    private let caFile: String?

    /// - Parameters:
    ///   - maxConcurrentStreams: the HTTP/2 streams per connection libcurl opens before it opens another.
    ///   - caFile: the CA bundle to verify providers' certificates with, instead of the system's.
    package init(maxConcurrentStreams: Int = 500, caFile: String? = nil) {
        self.caFile = caFile
        Self.globalInit
        multi = curl_multi_init()!
        _ = herald_curl_multi_setopt_long(multi, CURLMOPT_PIPELINING, Int(CURLPIPE_MULTIPLEX))
        _ = herald_curl_multi_setopt_long(multi, CURLMOPT_MAX_CONCURRENT_STREAMS, maxConcurrentStreams)
        let thread = Thread { [unowned self] in self.loop() }
        thread.name = "herald-curl"
        self.thread = thread
        thread.start()
    }

    private static let globalInit: Void = { _ = curl_global_init(Int(CURL_GLOBAL_ALL)) }()

    /// Stops the thread after failing every transfer still queued or running.
    package func shutdown() {
        let first = state.withLock { state -> Bool in
            defer { state.stopping = true }
            return !state.stopping
        }
        guard first else { return }
        curl_multi_wakeup(multi)
        stopped.wait()
        curl_multi_cleanup(multi)
    }

    deinit { shutdown() }

    package func perform(_ request: HTTPRequest) async -> Result<TransferResponse, TransferError> {
        await submit { transfer in transfer.configure(request) }
    }

    package func perform(_ request: SMTPRequest) async -> Result<TransferResponse, TransferError> {
        await submit { transfer in transfer.configure(request) }
    }

    private func submit(_ configure: @escaping (Transfer) -> Void) async -> Result<TransferResponse, TransferError> {
        await withCheckedContinuation { continuation in
            let transfer = Transfer(continuation: continuation, caFile: caFile)
            configure(transfer)
            let accepted = state.withLock { state -> Bool in
                guard !state.stopping else { return false }
                state.incoming.append(transfer)
                return true
            }
            if accepted {
                curl_multi_wakeup(multi)
            } else {
                transfer.finish(.failure(TransferError(code: -1, message: "the client is stopping", status: 0)))
            }
        }
    }

    // MARK: The driver thread

    private func loop() {
        var stillRunning: Int32 = 0
        while true {
            let (incoming, stopping) = state.withLock { state in
                defer { state.incoming.removeAll() }
                return (state.incoming, state.stopping)
            }
            if stopping {
                for transfer in incoming { transfer.finish(.failure(TransferError(code: -1, message: "the client is stopping", status: 0))) }
                for (handle, transfer) in running {
                    curl_multi_remove_handle(multi, handle)
                    transfer.finish(.failure(TransferError(code: -1, message: "the client is stopping", status: 0)))
                }
                running.removeAll()
                stopped.signal()
                return
            }
            for transfer in incoming {
                transfer.started = ContinuousClock.now
                let code = curl_multi_add_handle(multi, transfer.easy)
                if code == CURLM_OK {
                    running[transfer.easy] = transfer
                } else {
                    transfer.finish(.failure(TransferError(code: Int(code.rawValue), message: "curl_multi_add_handle failed", status: 0)))
                }
            }
            curl_multi_perform(multi, &stillRunning)
            var queued: Int32 = 0
            while let message = curl_multi_info_read(multi, &queued) {
                guard herald_curl_msg_is_done(message) != 0, let handle = herald_curl_msg_handle(message) else { continue }
                let result = herald_curl_msg_result(message)
                curl_multi_remove_handle(multi, handle)
                guard let transfer = running.removeValue(forKey: handle) else { continue }
                transfer.complete(result)
            }
            curl_multi_poll(multi, nil, 0, 1000, nil)
        }
    }
}

/// One easy handle with its buffers. Owned by the driver thread from submission to completion.
private final class Transfer: @unchecked Sendable {
    let easy: UnsafeMutableRawPointer
    private var continuation: CheckedContinuation<Result<TransferResponse, TransferError>, Never>?
    private var headerList: UnsafeMutablePointer<curl_slist>?
    private var recipientList: UnsafeMutablePointer<curl_slist>?
    /// Strings libcurl keeps pointers to until the transfer ends.
    private var strings: [UnsafeMutablePointer<CChar>] = []
    var requestBody: [UInt8] = []
    var readOffset = 0
    /// The first `CurlDriver.maxResponseBytes` of the answer's body.
    var responseBody: [UInt8] = []
    var responseHeaders: [String: String] = [:]
    var started = ContinuousClock.now
    /// The address guard's state, when the request has it on.
    private var addressGuard: UnsafeMutablePointer<herald_address_guard>?
    private let errorBuffer: UnsafeMutablePointer<CChar> = {
        let buffer = UnsafeMutablePointer<CChar>.allocate(capacity: Int(CURL_ERROR_SIZE))
        buffer.initialize(repeating: 0, count: Int(CURL_ERROR_SIZE))
        return buffer
    }()

    init(continuation: CheckedContinuation<Result<TransferResponse, TransferError>, Never>, caFile: String?) {
        self.continuation = continuation
        easy = curl_easy_init()
        let me = Unmanaged.passUnretained(self).toOpaque()
        _ = herald_curl_easy_setopt_long(easy, CURLOPT_NOSIGNAL, 1)
        _ = herald_curl_easy_setopt_write(easy, transferWrite)
        _ = herald_curl_easy_setopt_pointer(easy, CURLOPT_WRITEDATA, me)
        _ = herald_curl_easy_setopt_header(easy, transferHeader)
        _ = herald_curl_easy_setopt_pointer(easy, CURLOPT_HEADERDATA, me)
        _ = herald_curl_easy_setopt_read(easy, transferRead)
        _ = herald_curl_easy_setopt_pointer(easy, CURLOPT_READDATA, me)
        _ = herald_curl_easy_setopt_pointer(easy, CURLOPT_ERRORBUFFER, errorBuffer)
        if let caFile { setString(CURLOPT_CAINFO, caFile) }
    }

    private func setString(_ option: CURLoption, _ value: String) {
        let copy = strdup(value)!
        strings.append(copy)
        _ = herald_curl_easy_setopt_string(easy, option, copy)
    }

    func configure(_ request: HTTPRequest) {
        setString(CURLOPT_URL, request.url)
        setString(CURLOPT_CUSTOMREQUEST, request.method)
        if request.method == "POST" || request.method == "PUT" || !request.body.isEmpty {
            // libcurl copies the body: it can send it again when a stream is refused (an HTTP/2 server past its
            // SETTINGS_MAX_CONCURRENT_STREAMS) or a reused connection turns out dead, which a read callback cannot.
            _ = herald_curl_easy_setopt_long(easy, CURLOPT_POST, 1)
            _ = herald_curl_easy_setopt_long(easy, CURLOPT_POSTFIELDSIZE, request.body.count)
            let body: [UInt8] = request.body.isEmpty ? [0] : request.body  // never a null pointer; the size says 0
            _ = body.withUnsafeBytes { bytes in
                herald_curl_easy_setopt_pointer(easy, CURLOPT_COPYPOSTFIELDS, UnsafeMutableRawPointer(mutating: bytes.baseAddress!))
            }
        }
        for (name, value) in request.headers {
            headerList = curl_slist_append(headerList, "\(name): \(value)")
        }
        // No "Expect: 100-continue" round trip.
        headerList = curl_slist_append(headerList, "Expect:")
        _ = herald_curl_easy_setopt_slist(easy, CURLOPT_HTTPHEADER, headerList)
        if request.http2 {
            let prior = request.url.hasPrefix("http://")
            _ = herald_curl_easy_setopt_long(
                easy, CURLOPT_HTTP_VERSION,
                prior ? Int(CURL_HTTP_VERSION_2_PRIOR_KNOWLEDGE) : Int(CURL_HTTP_VERSION_2TLS))
            if prior && CurlInfo.priorKnowledgeReuseBroken {
                // libcurl before 8.0 fails a second request on a reused h2c connection ("Error in the HTTP2 framing
                // layer", curl/curl#10634, fixed by #10643): over cleartext (the simulators) each request gets its own
                // connection. TLS connections (APNs itself) are multiplexed.
                _ = herald_curl_easy_setopt_long(easy, CURLOPT_FRESH_CONNECT, 1)
                _ = herald_curl_easy_setopt_long(easy, CURLOPT_FORBID_REUSE, 1)
            } else {
                // Wait for the connection being set up rather than opening a second one: streams are multiplexed.
                _ = herald_curl_easy_setopt_long(easy, CURLOPT_PIPEWAIT, 1)
            }
        }
        if let user = request.user {
            setString(CURLOPT_USERNAME, user)
            setString(CURLOPT_PASSWORD, request.password ?? "")
            _ = herald_curl_easy_setopt_long(easy, CURLOPT_HTTPAUTH, 1 /* CURLAUTH_BASIC */)
        }
        _ = herald_curl_easy_setopt_long(easy, CURLOPT_TIMEOUT_MS, Int(request.timeout.milliseconds))
        _ = herald_curl_easy_setopt_long(easy, CURLOPT_CONNECTTIMEOUT_MS, min(Int(request.timeout.milliseconds), 5000))
        setString(CURLOPT_PROTOCOLS_STR, request.protocols)
        setString(CURLOPT_REDIR_PROTOCOLS_STR, request.protocols)
        if request.maxRedirects > 0 {
            _ = herald_curl_easy_setopt_long(easy, CURLOPT_FOLLOWLOCATION, 1)
            _ = herald_curl_easy_setopt_long(easy, CURLOPT_MAXREDIRS, request.maxRedirects)
        }
        if request.publicAddressesOnly {
            let guardState = UnsafeMutablePointer<herald_address_guard>.allocate(capacity: 1)
            guardState.initialize(to: herald_address_guard())
            addressGuard = guardState
            herald_curl_guard_addresses(easy, guardState)
            // A proxy named by the environment would be the address checked, not the endpoint's.
            setString(CURLOPT_PROXY, "")
        }
    }

    func configure(_ request: SMTPRequest) {
        setString(CURLOPT_URL, request.url)
        setString(CURLOPT_MAIL_FROM, "<\(request.from)>")
        for recipient in request.recipients {
            recipientList = curl_slist_append(recipientList, "<\(recipient)>")
        }
        _ = herald_curl_easy_setopt_slist(easy, CURLOPT_MAIL_RCPT, recipientList)
        requestBody = request.message
        _ = herald_curl_easy_setopt_long(easy, CURLOPT_UPLOAD, 1)
        _ = herald_curl_easy_setopt_long(easy, CURLOPT_INFILESIZE, requestBody.count)
        let ssl: UInt32 = switch request.startTLS {
        case .required: CURLUSESSL_ALL.rawValue
        case .attempt: CURLUSESSL_TRY.rawValue
        case .off: CURLUSESSL_NONE.rawValue
        }
        _ = herald_curl_easy_setopt_long(easy, CURLOPT_USE_SSL, Int(ssl))
        if let user = request.user {
            setString(CURLOPT_USERNAME, user)
            setString(CURLOPT_PASSWORD, request.password ?? "")
        }
        _ = herald_curl_easy_setopt_long(easy, CURLOPT_TIMEOUT_MS, Int(request.timeout.milliseconds))
        _ = herald_curl_easy_setopt_long(easy, CURLOPT_CONNECTTIMEOUT_MS, min(Int(request.timeout.milliseconds), 10_000))
    }

    func complete(_ code: CURLcode) {
        var status = 0
        _ = herald_curl_easy_getinfo_long(easy, CURLINFO_RESPONSE_CODE, &status)
        if code != CURLE_OK, let addressGuard, addressGuard.pointee.refused != 0 {
            let address = withUnsafeBytes(of: addressGuard.pointee.address) { raw in
                String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
            }
            finish(.failure(TransferError(
                code: TransferError.addressRefusedCode,
                message: "refused \(address): not a public address (private, loopback, link-local or reserved)", status: 0)))
        } else if code == CURLE_OK {
            finish(.success(TransferResponse(
                status: status, headers: responseHeaders, body: responseBody, duration: ContinuousClock.now - started)))
        } else {
            var message = String(cString: errorBuffer)
            if message.isEmpty { message = String(cString: curl_easy_strerror(code)) }
            finish(.failure(TransferError(code: Int(code.rawValue), message: message, status: status)))
        }
    }

    func finish(_ result: Result<TransferResponse, TransferError>) {
        continuation?.resume(returning: result)
        continuation = nil
    }

    deinit {
        curl_easy_cleanup(easy)
        curl_slist_free_all(headerList)
        curl_slist_free_all(recipientList)
        for string in strings { free(string) }
        errorBuffer.deallocate()
        addressGuard?.deallocate()
    }
}

private func transfer(_ pointer: UnsafeMutableRawPointer?) -> Transfer {
    Unmanaged<Transfer>.fromOpaque(pointer!).takeUnretainedValue()
}

private let transferWrite: @convention(c) (UnsafeMutablePointer<CChar>?, Int, Int, UnsafeMutableRawPointer?) -> Int = {
    data, size, count, user in
    let bytes = size * count
    let transfer = transfer(user)
    // Past the limit the rest is read and dropped: the status still counts, and a provider (or whoever answers in its
    // place) cannot make the notifier hold an answer of any size.
    let kept = min(bytes, CurlDriver.maxResponseBytes - transfer.responseBody.count)
    if let data, kept > 0 {
        data.withMemoryRebound(to: UInt8.self, capacity: kept) { pointer in
            transfer.responseBody.append(contentsOf: UnsafeBufferPointer(start: pointer, count: kept))
        }
    }
    return bytes
}

private let transferHeader: @convention(c) (UnsafeMutablePointer<CChar>?, Int, Int, UnsafeMutableRawPointer?) -> Int = {
    data, size, count, user in
    let bytes = size * count
    guard let data, bytes > 0 else { return bytes }
    // Read as bytes: Foundation's `trimmingCharacters` per header line was 1% of the push benchmark.
    data.withMemoryRebound(to: UInt8.self, capacity: bytes) { pointer in
        let line = UnsafeBufferPointer(start: pointer, count: bytes)
        if line.starts(with: "HTTP/".utf8) {
            // A new response (after a redirect or a 100): only the last one's headers count.
            transfer(user).responseHeaders.removeAll()
        } else if let colon = line.firstIndex(of: UInt8(ascii: ":")) {
            let name = String(decoding: trimmed(line[..<colon]), as: UTF8.self).lowercased()
            let value = String(decoding: trimmed(line[(colon + 1)...]), as: UTF8.self)
            transfer(user).responseHeaders[name] = value
        }
    }
    return bytes
}

/// A header line's part without the blanks around it (spaces, tabs, the line's CR LF).
private func trimmed(_ bytes: Slice<UnsafeBufferPointer<UInt8>>) -> Slice<UnsafeBufferPointer<UInt8>> {
    func blank(_ byte: UInt8) -> Bool { byte == 0x20 || byte == 0x09 || byte == 0x0D || byte == 0x0A }
    guard let first = bytes.firstIndex(where: { !blank($0) }), let last = bytes.lastIndex(where: { !blank($0) }) else {
        return bytes[bytes.startIndex..<bytes.startIndex]
    }
    return bytes[first...last]
}

private let transferRead: @convention(c) (UnsafeMutablePointer<CChar>?, Int, Int, UnsafeMutableRawPointer?) -> Int = {
    buffer, size, count, user in
    let me = transfer(user)
    let left = me.requestBody.count - me.readOffset
    let n = min(left, size * count)
    guard let buffer, n > 0 else { return 0 }
    me.requestBody.withUnsafeBytes { bytes in
        UnsafeMutableRawPointer(buffer).copyMemory(from: bytes.baseAddress! + me.readOffset, byteCount: n)
    }
    me.readOffset += n
    return n
}
