import Foundation

/// What a push's custom payload may hold on both providers, and how large a push may be: checked by `herald config
/// validate` for a template, by the API for a transactional push, and by the notifier for what was rendered
/// (docs/notifier.md, "Provider limits").
package enum PushPayloadRules {
    /// APNs takes 4,096 bytes of payload (`aps` and the custom keys); FCM 4,096 bytes of message (its notification and
    /// data). A push over it fails `payload_too_large` before it is sent.
    package static let maxBytes = 4096
    /// APNs' `apns-collapse-id` is at most 64 bytes.
    package static let maxCollapseIDBytes = 64

    /// Why a custom payload key cannot be used, or nil. `aps` is Apple's, `herald`, `com.herald` and `herald_…` Herald's
    /// own; FCM reserves `from`, `message_type` and any word starting with `google` or `gcm` (Google's FCM v1 API
    /// description, `Message.data`). docs/openapi.yaml says the same, as `propertyNames`.
    package static func reservedKey(_ key: String) -> String? {
        if key.isEmpty { return "a payload key is not empty" }
        if ["aps", "herald", "com.herald"].contains(key) || key.hasPrefix("herald_") {
            return "reserved: aps is Apple's, herald, com.herald and herald_… are Herald's"
        }
        if ["from", "message_type"].contains(key) || key.hasPrefix("google") || key.hasPrefix("gcm") {
            return "reserved by FCM: from, message_type and any key starting with google or gcm"
        }
        return nil
    }

    /// The fewest bytes any push takes around its texts: `{"notification":{"body":""}}` on FCM (28), `{"aps":{"alert":
    /// {"body":""}}}` on APNs (29); Herald's own keys come on top of that on both.
    static let leastEnvelope = 28

    /// The fields that reach the device on both providers (APNs' `aps` or Herald's key, FCM's notification or data);
    /// the others are headers or options on one of them (`ttl`, `priority`, `collapse_id`) or go to one provider only
    /// (`sound`, `category`, `channel_id`, …).
    static let sharedFields: Set<String> = ["title", "body", "image_url", "deeplink", "attachment_type", "badge"]

    /// The fewest bytes a push of these fields and this custom payload takes on whichever provider it goes to: the
    /// fields both providers carry and the payload, in the smallest envelope, before the other keys, the quotes and
    /// Herald's own fields. Over `maxBytes`, the push can never be sent.
    package static func leastBytes(fields: [String: String], payload: [JSONMember]) -> Int {
        // A background push shows nothing: its texts are not sent, only Herald's data (the deeplink) and the payload.
        let shared = fields["push_type"] == "background" ? ["deeplink"] : sharedFields
        return leastEnvelope + fields.filter { shared.contains($0.key) }.reduce(0) { $0 + $1.value.utf8.count }
            + payload.reduce(0) { $0 + $1.key.utf8.count + $1.value.serialized.count }
    }
}
