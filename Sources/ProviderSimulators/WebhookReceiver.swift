@preconcurrency import Crypto
import Foundation
import Hummingbird
import Shared

/// A customer's webhook endpoint: `/hooks/<name>[/…]` takes POST, PUT, PATCH and DELETE, checks the Standard Webhooks
/// signature against the receiver's secrets (`/_sim/webhook-secrets`; a receiver without secrets checks nothing) and
/// the timestamp (±5 minutes), answers 401 when either fails, else 200 or the fault of `webhook-<name>` (a 410 Gone, a
/// 503, a call held until released). Each call is recorded under `webhook-<name>` with its path as the target.
enum WebhookReceiver {
    static let tolerance: TimeInterval = 300

    static func register(on router: Router<BasicRequestContext>, state: SimulatorState) {
        for method in [HTTPRequest.Method.post, .put, .patch, .delete] {
            for path in ["hooks/:endpoint", "hooks/:endpoint/**"] {
                router.on(RouterPath(path), method: method) { request, context in
                    try await receive(request, endpoint: context.parameters.get("endpoint") ?? "", state: state)
                }
            }
        }
    }

    static func receive(_ request: Request, endpoint: String, state: SimulatorState) async throws -> Response {
        let body = Array(buffer: try await request.body.collect(upTo: 1 << 20))
        let provider = "webhook-\(endpoint)"
        var status = 200
        var retryAfter: Int?
        let secrets = state.webhookSecrets
        if !secrets.isEmpty, !verify(request, body: body, secrets: secrets, now: Date()) {
            status = 401
        } else if let fault = try await HTTPSimulators.applyFault(provider, state) {
            status = fault.status
            retryAfter = fault.retryAfter
        }
        state.record(.init(
            provider: provider, target: request.uri.description, headers: HTTPSimulators.headers(request),
            body: String(decoding: body, as: UTF8.self), status: status, at: Date()))
        var response = HTTPSimulators.json(.init(code: status), status == 200 ? #"{"ok":true}"# : #"{"error":"simulated"}"#)
        if let retryAfter { response.headers[.retryAfter] = String(retryAfter) }
        return response
    }

    /// Standard Webhooks' check: one of the `v1,` signatures is the HMAC-SHA256 of `id.timestamp.body` under one of
    /// the secrets, and the timestamp is within the tolerance.
    static func verify(_ request: Request, body: [UInt8], secrets: [String], now: Date) -> Bool {
        let headers = HTTPSimulators.headers(request)
        guard let id = headers["webhook-id"], let stamp = headers["webhook-timestamp"], let seconds = Int(stamp),
            let signatures = headers["webhook-signature"],
            abs(now.timeIntervalSince1970 - Double(seconds)) <= tolerance
        else { return false }
        let signed = Array("\(id).\(stamp).".utf8) + body
        let given = Set(signatures.split(separator: " ").compactMap { part -> Data? in
            part.hasPrefix("v1,") ? Data(base64Encoded: String(part.dropFirst(3))) : nil
        })
        for secret in secrets {
            guard secret.hasPrefix("whsec_"), let key = Data(base64Encoded: String(secret.dropFirst(6))) else { continue }
            let expected = Data(HMAC<SHA256>.authenticationCode(for: signed, using: SymmetricKey(data: key)))
            if given.contains(expected) { return true }
        }
        return false
    }
}
