import Foundation

/// A button of a notification category, defined once per app in the configuration (`kind: app`, `categories`) and
/// carried by each push whose `category` names it, so that the app's SDK can register the category's buttons without a
/// release (APNs `com.herald.a`, FCM data `herald_actions`). A category the app registers itself (a notification
/// content extension's) needs no definition here: the push carries its name either way.
package struct PushAction: Codable, Sendable, Equatable {
    package var id: String
    package var title: String
    /// Opened when the button is tapped.
    package var deeplink: String?
    /// The app comes to the foreground (iOS `.foreground`); false: handled in the background.
    package var foreground: Bool
    /// Shown as destructive (iOS).
    package var destructive: Bool
    /// What the app runs when the button is tapped (a Batch action or its own, `AppAction`).
    package var action: AppAction? = nil

    package init(id: String, title: String, deeplink: String? = nil, foreground: Bool = true, destructive: Bool = false) {
        self.id = id
        self.title = title
        self.deeplink = deeplink
        self.foreground = foreground
        self.destructive = destructive
    }

    /// As the SDK reads it: `i` id, `t` title, `l` deeplink, `f` foreground, `d` destructive, `x` the action.
    package var json: JSONValue {
        var members = [JSONMember("i", .string(id)), JSONMember("t", .string(title))]
        if let deeplink { members.append(JSONMember("l", .string(deeplink))) }
        members.append(JSONMember("f", .bool(foreground)))
        if destructive { members.append(JSONMember("d", .bool(true))) }
        if let action { members.append(JSONMember("x", action.json)) }
        return .object(members)
    }
}
