import Foundation

/// The push fields that say how a notification is delivered and shown rather than what it says (docs/configuration.md,
/// "Push templates"). Those with a fixed form are literals, checked when the configuration is read; the others are
/// template texts like the message's own fields.
package enum PushOptions {
    /// Literal fields and what each must be.
    static let literals: [String: (check: @Sendable (String) -> Bool, expected: String)] = [
        "push_type": ({ ["alert", "background"].contains($0) }, "alert or background"),
        "priority": ({ ["high", "normal"].contains($0) }, "high or normal"),
        "badge": ({ Int($0).map { (0...99_999).contains($0) } ?? false }, "a whole number from 0 to 99999"),
        "interruption_level": (
            { ["passive", "active", "time-sensitive", "critical"].contains($0) }, "passive, active, time-sensitive or critical"
        ),
        "relevance_score": (
            { text in Double(text).map { (0...1).contains($0) && text.allSatisfy { $0.isNumber || $0 == "." } } ?? false },
            "a number from 0 to 1"
        ),
        "ttl": ({ seconds($0).map { $0 <= maxTTL } ?? false }, "a duration up to 28d, such as 1h"),
    ]
    /// Template texts: APNs `category` (a notification content extension claims it), `thread_id`, `target_content_id`;
    /// Android `channel_id`, `tag`, `click_action`.
    static let texts = ["category", "thread_id", "target_content_id", "channel_id", "tag", "click_action"]
    static var names: [String] { literals.keys.sorted() + texts }

    /// FCM keeps a message at most four weeks.
    package static let maxTTL: TimeInterval = 28 * 86_400

    /// What is wrong with a literal field's value (nil: nothing, or not a literal field).
    static func problem(_ name: String, _ value: String) -> String? {
        guard let rule = literals[name], !rule.check(value) else { return nil }
        return "expected \(rule.expected), found \"\(value)\""
    }

    /// A `ttl` in seconds (`30m`, `1h`, `7d`).
    package static func seconds(_ text: String) -> TimeInterval? {
        ConfigReader.duration(text)
    }
}
