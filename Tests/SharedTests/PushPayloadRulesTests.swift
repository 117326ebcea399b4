import Foundation
import Testing

@testable import Shared

/// What can never fit a push (docs/notifier.md, "Provider limits"): the lower bound counts only what reaches the device
/// on both providers, so that nothing that could be sent is refused.
@Suite("Push payload rules")
struct PushPayloadRulesTests {
    @Test("the least bytes of a push: shared fields and the payload in the smallest envelope; headers and one-provider fields not counted", arguments: [
        (["title": "Hi", "body": "There"], [JSONMember](), 28 + 7),
        (["body": "B", "ttl": "3600s", "priority": "high", "collapse_id": "cart", "sound": "default", "channel_id": "offers"], [], 28 + 1),
        (["body": "B", "badge": "12", "deeplink": "app://x"], [JSONMember("n", .number("3"))], 28 + 1 + 2 + 7 + 1 + 1),
        // A background push sends no text: only Herald's deeplink and the payload.
        (["push_type": "background", "body": String(repeating: "b", count: 5000), "deeplink": "app://x"], [], 28 + 7),
    ])
    func leastBytes(fields: [String: String], payload: [JSONMember], expected: Int) {
        #expect(PushPayloadRules.leastBytes(fields: fields, payload: payload) == expected)
    }

    @Test("reserved payload keys: Apple's, Herald's and FCM's, as Google's description names them; others pass")
    func reservedKeys() {
        for key in ["", "aps", "herald", "com.herald", "herald_badge", "from", "message_type", "google.c.a.e", "googlex", "gcm.n.e", "gcmx"] {
            #expect(PushPayloadRules.reservedKey(key) != nil, "\(key)")
        }
        for key in ["From", "sender", "order", "apsx", "my_google", "message-type", "Google"] {
            #expect(PushPayloadRules.reservedKey(key) == nil, "\(key)")
        }
    }
}
