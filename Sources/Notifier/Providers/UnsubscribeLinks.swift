@preconcurrency import Crypto
import Foundation
import Shared

/// Signed one-click unsubscribe links (RFC 8058): the token names the profile and address and is signed with the
/// notifier's secret, so that nobody can unsubscribe someone else by guessing a URL.
struct UnsubscribeLinks: Sendable {
    let secret: SymmetricKey
    /// `https://notify.example.com` (the notifier's public address).
    let publicURL: String

    init(secret: String, publicURL: String) {
        self.secret = SymmetricKey(data: Array(secret.utf8))
        self.publicURL = publicURL.hasSuffix("/") ? String(publicURL.dropLast()) : publicURL
    }

    struct Claim: Sendable, Equatable {
        var profileKey: String
        var address: String
        var sendID: String
    }

    func token(_ claim: Claim) -> String {
        let payload = JSONValue.object([
            JSONMember("p", .string(claim.profileKey)), JSONMember("a", .string(claim.address)),
            JSONMember("s", .string(claim.sendID)),
        ]).serialized
        let body = Base64URL.encode(payload)
        let mac = HMAC<SHA256>.authenticationCode(for: Array(body.utf8), using: secret)
        return body + "." + Base64URL.encode(mac)
    }

    func url(_ claim: Claim) -> String { "\(publicURL)/v1/unsubscribe/\(token(claim))" }

    /// The claim of a token this notifier signed (compared in constant time); nil for anything else.
    func verify(_ token: String) -> Claim? {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 2, let mac = Base64URL.decode(String(parts[1])),
            HMAC<SHA256>.isValidAuthenticationCode(mac, authenticating: Array(parts[0].utf8), using: secret),
            let payload = Base64URL.decode(String(parts[0])), let json = try? JSONParser.parse(payload),
            let key = json["p"]?.stringValue, let address = json["a"]?.stringValue, let sendID = json["s"]?.stringValue
        else { return nil }
        return Claim(profileKey: key, address: address, sendID: sendID)
    }
}
