import Foundation

/// How a send holding a Push Story (`PushStory`) reaches a device: the layout of Braze's Push Story extension on APNs,
/// the same pages as data on FCM (docs/push-stories.md). The notifier builds the notification with it; the
/// orchestrator measures it after rendering, so that a story too large for a push fails whole, naming its largest field.
package enum PushStoryPayload {
    /// The keys a story takes at the root of an APNs notification besides `aps`: a story template's custom payload
    /// cannot use them.
    package static let rootKeys: Set<String> = ["ab", "ab_carousel", "apple", "c_items"]

    /// APNs, at the root of the notification: `aps` with `content-available` (a background push: the app's SDK fetches
    /// the images into its App Group and posts the notification itself) and the story's `category`; `ab.type` 7 and
    /// `ab_carousel` 1 (what marks a story); `apple.alert`, the fallback alert (title, body, badge, sound); `c_items`,
    /// the pages (`PushStory.Page.json`).
    package static func apnsMembers(_ content: [String: String], badge: Int?) -> [JSONMember] {
        let text = { (name: String) in content[name].flatMap { $0.isEmpty ? nil : $0 } }
        let aps = [
            JSONMember("content-available", .number("1")),
            JSONMember("category", .string(text("category") ?? PushStory.category)),
        ]
        var alert: [JSONMember] = []
        for field in ["title", "body"] {
            if let value = text(field) { alert.append(JSONMember(field, .string(value))) }
        }
        if let badge { alert.append(JSONMember("badge", .number(String(badge)))) }
        if let sound = text("sound") { alert.append(JSONMember("sound", .string(sound))) }
        return [
            JSONMember("aps", .object(aps)),
            JSONMember("ab", .object([JSONMember("type", .number("7"))])),
            JSONMember("ab_carousel", .number("1")),
            JSONMember("apple", .object([JSONMember("alert", .object(alert))])),
            JSONMember("c_items", .array(PushStory.pages(content).map(\.json))),
        ]
    }

    /// FCM's data (strings only): `herald_story_pages`, the pages as the JSON text of the same array; the fallback
    /// alert as `herald_story_title` and `herald_story_body`. The message is a data message: the app draws the story.
    package static func fcmData(_ content: [String: String]) -> [JSONMember] {
        let pages = JSONValue.array(PushStory.pages(content).map(\.json)).serialized
        var data = [JSONMember("herald_story_pages", .string(String(decoding: pages, as: UTF8.self)))]
        if let title = content["title"] { data.append(JSONMember("herald_story_title", .string(title))) }
        if let body = content["body"] { data.append(JSONMember("herald_story_body", .string(body))) }
        return data
    }

    /// The bytes of a story's APNs notification before Herald's own key (the send id and campaign, a few dozen bytes)
    /// and a badge: the story's members and the custom payload.
    package static func leastBytes(_ content: [String: String], payload: [String: JSONValue]?) -> Int {
        var members = apnsMembers(content, badge: nil)
        for (key, value) in (payload ?? [:]).sorted(by: { $0.key < $1.key }) { members.append(JSONMember(key, value)) }
        return JSONValue.object(members).serialized.count
    }

    /// Why rendered story fields and payload cannot go in one push, or nil: over the 4,096 bytes APNs takes, naming
    /// the largest field of the story (what to shorten).
    package static func sizeProblem(_ content: [String: String], payload: [String: JSONValue]?, herald: Int) -> (field: String, reason: String)? {
        let size = leastBytes(content, payload: payload) + herald
        guard size > PushPayloadRules.maxBytes else { return nil }
        let largest = content.filter { PushStory.parse($0.key) != nil || ["title", "body"].contains($0.key) }
            .max { ($0.value.utf8.count, $1.key) < ($1.value.utf8.count, $0.key) }
        let field = largest?.key ?? "story"
        return (
            field,
            "the story takes \(size) bytes after rendering, and APNs takes \(PushPayloadRules.maxBytes) (its largest field, \(field), holds \(largest?.value.utf8.count ?? 0))"
        )
    }
}
