@preconcurrency import Crypto
import Foundation

/// Standard Webhooks (v1) signing: `webhook-signature` is `v1,<base64 of HMAC-SHA256(key, "<id>.<timestamp>.<body>")>`,
/// one per secret, separated by spaces (a receiver accepts any that verifies, so a secret is rotated by listing the new
/// one beside the old). The body signed is the bytes sent, never re-serialised. `make test` checks these against the
/// reference verifier (PyPI `standardwebhooks`, `WebhookSignatureTests`).
enum WebhookSignature {
    /// The value of `webhook-signature` for a message signed with each of `keys`.
    static func header(id: String, timestamp: Int, body: [UInt8], keys: [[UInt8]]) -> String {
        let signed = Array("\(id).\(timestamp).".utf8) + body
        return keys.map { key in
            let mac = HMAC<SHA256>.authenticationCode(for: signed, using: SymmetricKey(data: key))
            return "v1," + Data(mac).base64EncodedString()
        }.joined(separator: " ")
    }

    /// The message id of a send's call, the same on every attempt (receivers dedupe by it).
    static func messageID(sendID: String) -> String { "msg_\(sendID)" }
}
