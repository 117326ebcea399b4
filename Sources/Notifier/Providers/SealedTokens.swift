@preconcurrency import Crypto
import Foundation

/// Tokens that carry a claim nobody can read or make without the notifier's secret: the claim encrypted and
/// authenticated (ChaChaPoly, a fresh nonce per token) with a key derived for one purpose (HKDF-SHA256 of the secret),
/// in base64url. A token altered by one character, or made for another purpose, opens to nothing.
struct SealedTokens: Sendable {
    let key: SymmetricKey

    init(secret: SymmetricKey, purpose: String) {
        key = HKDF<SHA256>.deriveKey(inputKeyMaterial: secret, info: Array(purpose.utf8), outputByteCount: 32)
    }

    func seal(_ claim: [UInt8]) -> String {
        // Sealing cannot fail with a 256-bit key.
        Base64URL.encode(Array(try! ChaChaPoly.seal(claim, using: key).combined))
    }

    /// The claim of a token sealed with this key; nil for anything else.
    func open(_ token: String) -> [UInt8]? {
        guard let sealed = Base64URL.decode(token), let box = try? ChaChaPoly.SealedBox(combined: sealed),
            let opened = try? ChaChaPoly.open(box, using: key)
        else { return nil }
        return Array(opened)
    }
}
