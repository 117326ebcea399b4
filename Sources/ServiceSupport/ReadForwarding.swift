import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import Shared

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A read that needs a partition this instance does not own, sent to the instance that owns it (found in the
/// service's `PartitionDirectory`), whose answer goes back whole: apps reach any instance behind a load balancer, and
/// only the owner has the partition's state. One hop at most: the forwarded request says so, and an instance that does
/// not own the partition either answers "retry". This is one service's instances finding each other; services still
/// talk only through Kafka.
package enum ReadForwarding {
    /// The headers of the owner's answer passed back (the body is JSON).
    static let answerHeaders: [HTTPField.Name] = [.contentType, .eTag, .retryAfter, .cacheControl]

    /// Whether the request was already forwarded once (it must be answered where it is).
    package static func isForwarded(_ request: Request) -> Bool { request.headers[.heraldForwardedBy] != nil }

    /// Whether the request was forwarded by an instance of the service: it presents this instance's peer key
    /// (`PartitionPeers`), which only readers of `herald.owners` know. What the instance that forwarded it counted
    /// (rate limits) is not counted again; anyone can write the forwarding header itself.
    package static func isFromPeer(_ request: Request, key: String) -> Bool {
        guard isForwarded(request), let presented = request.headers[.heraldPeerKey] else { return false }
        return ConstantTime.equal(Array(presented.utf8), Array(key.utf8))
    }

    /// `request` (a GET: its path and query, and of its headers only `passing`: what the owner needs to answer) to the
    /// owner's address, with the owner's peer key; its answer, or 503 with `Retry-After` when the owner does not answer
    /// within `timeout`. Nothing else of the client's request (cookies, proxies' headers) goes to another host.
    package static func forward(
        _ request: Request, to owner: OwnerAnnouncement, passing: [HTTPField.Name], from instance: String, timeout: TimeInterval = 5
    ) async -> Response {
        guard let url = URL(string: owner.url + request.uri.description) else { return unavailable("the owner's address is not a URL") }
        var forwarded = URLRequest(url: url, timeoutInterval: timeout)
        forwarded.httpMethod = request.method.rawValue
        for name in passing {
            for value in request.headers[values: name] { forwarded.addValue(value, forHTTPHeaderField: name.rawName) }
        }
        if let key = owner.peerKey { forwarded.setValue(key, forHTTPHeaderField: HTTPField.Name.heraldPeerKey.rawName) }
        forwarded.setValue(instance, forHTTPHeaderField: HTTPField.Name.heraldForwardedBy.rawName)
        do {
            let (data, answer) = try await URLSession.shared.data(for: forwarded)
            guard let http = answer as? HTTPURLResponse else { return unavailable("the owner's answer is not HTTP") }
            var headers = HTTPFields()
            for name in answerHeaders {
                if let value = http.value(forHTTPHeaderField: name.rawName) { headers[name] = value }
            }
            return Response(
                status: HTTPResponse.Status(code: http.statusCode), headers: headers,
                body: data.isEmpty ? ResponseBody() : ResponseBody(byteBuffer: ByteBuffer(bytes: data)))
        } catch {
            return unavailable("the partition's owner did not answer: \(error.localizedDescription)")
        }
    }

    package static func unavailable(_ message: String) -> Response {
        var response = Response.jsonError(.serviceUnavailable, "owner_unavailable", message)
        response.headers[.retryAfter] = "1"
        return response
    }
}
