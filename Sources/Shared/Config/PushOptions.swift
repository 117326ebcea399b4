import Foundation

/// The push fields that say how a notification is delivered and shown rather than what it says (docs/configuration.md,
/// "Push templates"). Those with a fixed form are literals, checked when the configuration is read; the others are
/// template texts like the message's own fields.
package enum PushOptions {
    /// Literal fields and what each must be.
    package static let literals: [String: (check: @Sendable (String) -> Bool, expected: String)] = [
        "push_type": ({ ["alert", "background"].contains($0) }, "alert or background"),
        "priority": ({ ["high", "normal"].contains($0) }, "high or normal"),
        "badge": ({ badge($0) != nil }, "a whole number from 0 to 99999, or +1 to +99999 to add to the installation's count"),
        "interruption_level": (
            { ["passive", "active", "time-sensitive", "critical"].contains($0) }, "passive, active, time-sensitive or critical"
        ),
        "relevance_score": (
            { text in Double(text).map { (0...1).contains($0) && text.allSatisfy { $0.isNumber || $0 == "." } } ?? false },
            "a number from 0 to 1"
        ),
        "ttl": ({ seconds($0).map { $0 <= maxTTL } ?? false }, "a duration up to 28d, such as 1h"),
        "attachment_type": ({ attachmentTypes.contains($0) }, "one of \(attachmentTypes.sorted().joined(separator: ", "))"),
    ]

    /// A template's `badge`: a number the app icon shows (`3`; `0` clears it), or an amount added to the count the
    /// notifier keeps per installation (`+1`).
    package enum Badge: Equatable {
        case set(Int)
        case add(Int)
    }

    package static func badge(_ text: String) -> Badge? {
        let digits = text.hasPrefix("+") ? text.dropFirst() : Substring(text)
        guard !digits.isEmpty, digits.count <= 5, digits.allSatisfy({ $0.isASCII && $0.isNumber }), let number = Int(digits) else {
            return nil
        }
        if text.hasPrefix("+") { return number >= 1 ? .add(number) : nil }
        return .set(number)
    }

    /// The file types of a notification attachment a notification service extension can hand to iOS
    /// (`UNNotificationAttachment`: images, audio, video), as Braze's `ab.att.type` names them.
    package static let attachmentTypes: Set<String> = [
        "jpg", "jpeg", "png", "gif", "aif", "aiff", "wav", "mp3", "m4a", "mpg", "mpeg", "mp4", "m4v", "avi",
    ]

    /// An attachment's type: the template's, else the extension of the URL's path when it is a known type.
    package static func attachmentType(url: String, declared: String?) -> String? {
        if let declared { return declared }
        let path = url.split(separator: "?", maxSplits: 1).first.map(String.init) ?? url
        guard let dot = path.lastIndex(of: "."), !path[dot...].contains("/") else { return nil }
        let suffix = path[path.index(after: dot)...].lowercased()
        return attachmentTypes.contains(suffix) ? suffix : nil
    }
    /// Template texts: APNs `category` (a notification content extension claims it), `thread_id`, `target_content_id`;
    /// Android `channel_id`, `tag`, `click_action`.
    static let texts = ["category", "thread_id", "target_content_id", "channel_id", "tag", "click_action"]
    package static var names: [String] { literals.keys.sorted() + texts }

    /// FCM keeps a message at most four weeks.
    package static let maxTTL: TimeInterval = 28 * 86_400

    /// What is wrong with a literal field's value (nil: nothing, or not a literal field).
    package static func problem(_ name: String, _ value: String) -> String? {
        guard let rule = literals[name], !rule.check(value) else { return nil }
        return "expected \(rule.expected), found \"\(value)\""
    }

    /// A `ttl` in seconds (`30m`, `1h`, `7d`).
    package static func seconds(_ text: String) -> TimeInterval? {
        ConfigReader.duration(text)
    }
}
