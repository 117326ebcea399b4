@preconcurrency import Crypto
import Foundation
import Shared

/// An email's open pixel and tracked links (docs/measurement.md, "Opens and clicks"). Each URL carries a sealed claim
/// (`SealedTokens`: nobody reads the recipient out of it, nor makes or alters one): the send, the target, the profile,
/// the campaign and experiment arm, when the email left, and for a link its index and the URL it goes to. So a click is
/// redirected only where the email's own link pointed (no open redirect), a forged or altered link is refused and
/// counted nowhere, and a link needs no state to stay valid: it works as long as the secret is the same.
struct TrackingLinks: Sendable {
    let sealing: SealedTokens
    /// `https://notify.example.com` (the notifier's public address).
    let publicURL: String

    static let prefix = "t1."

    init(secret: String, publicURL: String) {
        sealing = SealedTokens(secret: SymmetricKey(data: Array(secret.utf8)), purpose: "herald tracking links v1")
        self.publicURL = publicURL.hasSuffix("/") ? String(publicURL.dropLast()) : publicURL
    }

    struct Claim: Sendable, Equatable {
        var sendID: String
        var targetID: String
        var profileKey: String
        var campaign: String?
        var experiment: String?
        var variant: String?
        /// When the email left the notifier (seconds since 1970): a click within seconds of it is a link scanner's.
        var sentAt: Int64
        /// A click: the link's index in the HTML (from 0) and where it goes; an open: neither.
        var link: Int? = nil
        var url: String? = nil
    }

    /// The claims of an email's open pixel and links: everything but the link.
    static func claim(_ send: SendRequest, target: DeliveryTarget, at time: Date) -> Claim {
        Claim(
            sendID: send.sendID, targetID: target.id, profileKey: send.profileKey, campaign: send.campaign.isEmpty ? nil : send.campaign,
            experiment: send.experiment, variant: send.variant, sentAt: Int64(time.timeIntervalSince1970))
    }

    func token(_ claim: Claim) -> String {
        var members = [
            JSONMember("s", .string(claim.sendID)), JSONMember("t", .string(claim.targetID)),
            JSONMember("k", .string(claim.profileKey)), JSONMember("at", .number(String(claim.sentAt))),
        ]
        if let campaign = claim.campaign { members.append(JSONMember("c", .string(campaign))) }
        if let experiment = claim.experiment, let variant = claim.variant {
            members += [JSONMember("e", .string(experiment)), JSONMember("v", .string(variant))]
        }
        if let link = claim.link, let url = claim.url { members += [JSONMember("i", .number(String(link))), JSONMember("u", .string(url))] }
        return Self.prefix + sealing.seal(JSONValue.object(members).serialized)
    }

    func openURL(_ claim: Claim) -> String { "\(publicURL)/v1/t/o/\(token(claim))" }

    func clickURL(_ claim: Claim, link: Int, url: String) -> String {
        var claim = claim
        (claim.link, claim.url) = (link, url)
        return "\(publicURL)/v1/t/c/\(token(claim))"
    }

    /// The claim of a token this notifier made; nil for anything else.
    func verify(_ token: String) -> Claim? {
        guard token.hasPrefix(Self.prefix), let payload = sealing.open(String(token.dropFirst(Self.prefix.count))),
            let json = try? JSONParser.parse(payload), let sendID = json["s"]?.stringValue, let targetID = json["t"]?.stringValue,
            let key = json["k"]?.stringValue, case .number(let at)? = json["at"], let sentAt = Int64(at)
        else { return nil }
        var claim = Claim(
            sendID: sendID, targetID: targetID, profileKey: key, campaign: json["c"]?.stringValue, experiment: json["e"]?.stringValue,
            variant: json["v"]?.stringValue, sentAt: sentAt)
        if case .number(let link)? = json["i"], let url = json["u"]?.stringValue {
            guard let index = Int(link), TrackedHTML.isTrackable(url) else { return nil }
            (claim.link, claim.url) = (index, url)
        }
        return claim
    }
}
