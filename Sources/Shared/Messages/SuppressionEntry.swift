import Crypto
import Foundation

/// An address or a number on the suppression list (`herald.suppressions`, compacted, key `<project>/<channel>/<digest>`;
/// a tombstone lifts it): never sent to on its channel, whatever its profile's subscription says, until an operator
/// removes it (docs/data-rights.md, "The suppression list"). The list keeps no address in the clear: the key holds the
/// SHA-256 of the normalised address, and `hint` a masked form an operator recognises (`p***@example.com`).
package struct SuppressionEntry: WireMessage {
    package static let kind = "suppression"
    package static let version = 1

    package var project: String
    /// `email` or `sms`.
    package var channel: MessageChannel
    /// `SuppressionEntry.digest` of the address.
    package var digest: String
    package var hint: String
    /// Why: `hard_bounce` (the notifier), `operator` (`herald suppression add`), `erased` (an erase with "do not contact
    /// again"), or the operator's own word.
    package var reason: String
    /// Who wrote it: `notifier`, `herald` (the CLI).
    package var by: String
    package var at: Date

    package init(project: String, channel: MessageChannel, address: String, reason: String, by: String, at: Date) {
        self.project = project
        self.channel = channel
        self.digest = Self.digest(channel: channel, address: address)
        self.hint = Self.hint(channel: channel, address: address)
        self.reason = reason
        self.by = by
        self.at = at
    }

    package var key: String { Self.key(project: project, channel: channel, digest: digest) }

    package static func key(project: String, channel: MessageChannel, digest: String) -> String { "\(project)/\(channel.rawValue)/\(digest)" }

    /// The channels an address can be suppressed on.
    package static let channels: [MessageChannel] = [.email, .sms]

    /// An address as the list compares it: an email trimmed and lowercased (mailbox providers do not tell case apart in
    /// practice), a phone number trimmed (E.164 as Herald keeps it).
    package static func normalized(channel: MessageChannel, address: String) -> String {
        let trimmed = address.trimmingCharacters(in: .whitespacesAndNewlines)
        return channel == .email ? trimmed.lowercased() : trimmed
    }

    /// 64 hex characters: SHA-256 of `<channel>:<normalised address>`.
    package static func digest(channel: MessageChannel, address: String) -> String {
        let text = "\(channel.rawValue):\(normalized(channel: channel, address: address))"
        return SHA256.hash(data: Array(text.utf8)).map { String(format: "%02x", $0) }.joined()
    }

    /// `p***@example.com`, `+336*****78`: enough to recognise, not to read back.
    package static func hint(channel: MessageChannel, address: String) -> String {
        let text = normalized(channel: channel, address: address)
        if channel == .email, let at = text.lastIndex(of: "@") {
            return "\(text.prefix(1))***\(text[at...])"
        }
        guard text.count > 6 else { return String(repeating: "*", count: text.count) }
        return "\(text.prefix(4))\(String(repeating: "*", count: text.count - 6))\(text.suffix(2))"
    }

    enum CodingKeys: String, CodingKey {
        case project, channel, digest, hint, reason, by, at
    }
}
