import Crypto
import Foundation
import Shared

/// The proof that the customer's server vouches for a custom ID (`X-CustomID-Auth`): the lowercase hex
/// HMAC-SHA256 of api key ‖ custom ID, keyed with a secret of the app that only the customer's servers know. The
/// inbox asks for it under the app's `inbox_secret`; app writes under its `identity_secrets` when the app sets
/// `require_signed_identity` (docs/security.md).
package enum CustomIDProof {
    /// `hex(HMAC-SHA256(key: secret, message: api key ‖ custom ID))`, lowercase.
    package static func make(apiKey: String, customID: String, secret: String) -> String {
        let mac = HMAC<SHA256>.authenticationCode(
            for: Array((apiKey + customID).utf8), using: SymmetricKey(data: Array(secret.utf8)))
        return mac.hexString
    }

    /// Whether `proof` is the proof under any of `secrets`, compared in constant time (the length of the expected
    /// proof is public). More than one secret lets a secret be rotated without refusing the proofs of the old one.
    package static func verify(_ proof: String, apiKey: String, customID: String, secrets: [String]) -> Bool {
        let given = Array(proof.lowercased().utf8)
        var matched = false
        for secret in secrets {
            matched = ConstantTime.equal(Array(make(apiKey: apiKey, customID: customID, secret: secret).utf8), given) || matched
        }
        return matched
    }
}
