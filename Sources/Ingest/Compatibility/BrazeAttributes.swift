import Foundation
import Shared

/// Braze's standard user attributes as Herald stores them (docs/ingest.md, "Braze attributes"). Every other key of an
/// attributes object is a custom attribute under its mapped name (`NameMapping`); `first_name`, `last_name`,
/// `gender`, `home_city`, `bio` and `dob` are custom attributes of those names.
enum BrazeAttributes {
    /// Braze's name → Herald's native attribute (validated by Herald's own rules).
    static let natives: [String: String] = [
        "email": "$email_address", "phone": "$phone_number", "language": "$language", "country": "$region",
        "time_zone": "$timezone", "email_subscribe": "$email_marketing",
    ]

    /// Standard attributes Herald has no place for, and why.
    static let unsupported: [String: String] = [
        "push_subscribe": "push reachability is per installation in Herald (permission, opt-out), not a profile flag",
        "subscription_groups": "Herald has one marketing state per channel (email_subscribe), no subscription groups",
        "push_tokens": "push tokens come from the app API (/v1/app/push-token) or /v1/sends/push",
        "current_location": "locations come from the app API (/v1/app/location)",
        "image_url": "not stored: set it as a custom attribute under another name if needed",
    ]

    /// A standard attribute's value in Herald's terms: `email_subscribe`'s `opted_in` is `subscribed` (Herald has
    /// two states: subscribed or not).
    static func nativeValue(_ key: String, _ value: JSONValue) -> JSONValue {
        if key == "email_subscribe", value == .string("opted_in") { return .string("subscribed") }
        return value
    }

    /// Braze's `dob` is a calendar date (`1980-12-21`): stored as a date at midnight UTC.
    static func dateOfBirth(_ value: JSONValue) -> JSONValue {
        guard case .string(let text) = value, text.utf8.count == 10, Rules.parseTime(text + "T00:00:00Z") != nil else {
            return value
        }
        return .string(text + "T00:00:00Z")
    }
}
