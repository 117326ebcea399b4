@preconcurrency import Crypto
import Foundation
import Shared

/// One-click unsubscribe links (RFC 8058). The token is opaque and sealed (`SealedTokens`): the claim (profile, address,
/// send) is encrypted and authenticated with a key derived from the notifier's secret, so that nobody can read an
/// address out of a link, nor unsubscribe someone else by making one. Links of the first format (the claim readable in
/// base64, signed with HMAC) keep working: they are in emails already sent.
struct UnsubscribeLinks: Sendable {
    /// The first format's key (HMAC-SHA256 over the base64 claim).
    let secret: SymmetricKey
    let sealing: SealedTokens
    /// `https://notify.example.com` (the notifier's public address).
    let publicURL: String

    static let prefix = "v2."

    init(secret: String, publicURL: String) {
        self.secret = SymmetricKey(data: Array(secret.utf8))
        sealing = SealedTokens(secret: self.secret, purpose: "herald unsubscribe links v2")
        self.publicURL = publicURL.hasSuffix("/") ? String(publicURL.dropLast()) : publicURL
    }

    struct Claim: Sendable, Equatable {
        var profileKey: String
        var address: String
        var sendID: String
    }

    /// The claim as the token carries it: `{"p": profile, "a": address, "s": send}`.
    private static func payload(_ claim: Claim) -> [UInt8] {
        JSONValue.object([
            JSONMember("p", .string(claim.profileKey)), JSONMember("a", .string(claim.address)),
            JSONMember("s", .string(claim.sendID)),
        ]).serialized
    }

    func token(_ claim: Claim) -> String { Self.prefix + sealing.seal(Self.payload(claim)) }

    func url(_ claim: Claim) -> String { "\(publicURL)/v1/unsubscribe/\(token(claim))" }

    /// The claim of a token this notifier made (either format); nil for anything else.
    func verify(_ token: String) -> Claim? {
        let payload: [UInt8]
        if token.hasPrefix(Self.prefix) {
            guard let opened = sealing.open(String(token.dropFirst(Self.prefix.count))) else { return nil }
            payload = opened
        } else {
            // The first format, `<base64 claim>.<base64 HMAC>` (compared in constant time).
            let parts = token.split(separator: ".", omittingEmptySubsequences: false)
            guard parts.count == 2, let mac = Base64URL.decode(String(parts[1])),
                HMAC<SHA256>.isValidAuthenticationCode(mac, authenticating: Array(parts[0].utf8), using: secret),
                let claim = Base64URL.decode(String(parts[0]))
            else { return nil }
            payload = claim
        }
        guard let json = try? JSONParser.parse(payload), let key = json["p"]?.stringValue,
            let address = json["a"]?.stringValue, let sendID = json["s"]?.stringValue
        else { return nil }
        return Claim(profileKey: key, address: address, sendID: sendID)
    }

    /// A token of the first format, as links sent before the second carry it (tests).
    func legacyToken(_ claim: Claim) -> String {
        let body = Base64URL.encode(Self.payload(claim))
        let mac = HMAC<SHA256>.authenticationCode(for: Array(body.utf8), using: secret)
        return body + "." + Base64URL.encode(mac)
    }
}
