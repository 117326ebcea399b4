import Foundation

// What an app reports about its own use (`POST /v1/app/activity`, docs/ingest.md): sessions, and what its user did
// with a notification. Each is client-timestamped; its record id is derived from what it reports, so the same
// report sent twice is one.

/// `session`: a session of the installation started or ended (braze-rules §4.2).
package struct SessionReport: Sendable, Equatable {
    package enum Kind: String, Sendable {
        case start, end
    }

    package var kind: Kind
    /// The app's id for the session (the SDK's), the same on its start and its end.
    package var sessionID: String
    /// When it started or ended, on the device's clock.
    package var time: Date
    /// An end's length in seconds, as the app measured it (used when the start is not known).
    package var duration: Double?

    package init(kind: Kind, sessionID: String, time: Date, duration: Double? = nil) {
        self.kind = kind
        self.sessionID = sessionID
        self.time = time
        self.duration = duration
    }

    var json: JSONValue {
        var members = [
            JSONMember("kind", .string(kind.rawValue)), JSONMember("session_id", .string(sessionID)),
            JSONMember("time", .string(WireTime.format(time))),
        ]
        if let duration { members.append(JSONMember("duration", .number(JSONValue.literal(duration)))) }
        return .object(members)
    }

    init(wire value: JSONValue, path: String) throws(WireError) {
        let object = try WireObject(value, path: path)
        let kindText = try object.string("kind")
        guard let kind = Kind(rawValue: kindText) else { throw WireError(reason: "\(path).kind: expected start or end, got \(kindText)") }
        guard let time = try object.optionalDate("time") else { throw WireError(reason: "\(path).time: missing") }
        self.init(kind: kind, sessionID: try object.string("session_id"), time: time, duration: try object.optionalDouble("duration"))
    }
}

/// `push_open`: the installation's user opened a notification (`action` nil), pressed one of its buttons (`action`:
/// the button's id), or tapped a page of a Push Story (`page`: the page's `id`), naming the notification by its send id
/// (the payload's `i`, or `herald_send_id` on Android).
package struct PushOpenReport: Sendable, Equatable {
    package var sendID: String
    package var action: String?
    package var page: String?
    package var time: Date

    package init(sendID: String, action: String? = nil, page: String? = nil, time: Date) {
        self.sendID = sendID
        self.action = action
        self.page = page
        self.time = time
    }

    var json: JSONValue {
        var members = [JSONMember("send_id", .string(sendID))]
        if let action { members.append(JSONMember("action", .string(action))) }
        if let page { members.append(JSONMember("page", .string(page))) }
        members.append(JSONMember("time", .string(WireTime.format(time))))
        return .object(members)
    }

    init(wire value: JSONValue, path: String) throws(WireError) {
        let object = try WireObject(value, path: path)
        guard let time = try object.optionalDate("time") else { throw WireError(reason: "\(path).time: missing") }
        self.init(
            sendID: try object.string("send_id"), action: try object.optionalString("action"), page: try object.optionalString("page"),
            time: time)
    }
}

/// `in_app`: the installation showed an in-app message (`impression`), its user clicked it or one of its buttons
/// (`click`, `button`: the button's id), or dismissed it (`dismiss`).
package struct InAppReport: Sendable, Equatable {
    package enum Action: String, Sendable, CaseIterable {
        case impression, click, dismiss
    }

    package var action: Action
    /// The in-app message's id in the project.
    package var message: String
    package var button: String?
    package var time: Date

    package init(action: Action, message: String, button: String? = nil, time: Date) {
        self.action = action
        self.message = message
        self.button = button
        self.time = time
    }

    var json: JSONValue {
        var members = [JSONMember("action", .string(action.rawValue)), JSONMember("message", .string(message))]
        if let button { members.append(JSONMember("button", .string(button))) }
        members.append(JSONMember("time", .string(WireTime.format(time))))
        return .object(members)
    }

    init(wire value: JSONValue, path: String) throws(WireError) {
        let object = try WireObject(value, path: path)
        let actionText = try object.string("action")
        guard let action = Action(rawValue: actionText) else {
            throw WireError(reason: "\(path).action: expected impression, click or dismiss, got \(actionText)")
        }
        guard let time = try object.optionalDate("time") else { throw WireError(reason: "\(path).time: missing") }
        self.init(action: action, message: try object.string("message"), button: try object.optionalString("button"), time: time)
    }
}

/// `content_card`: the app showed a content card of the profile's feed (`view`), its user opened it (`click`), or
/// dismissed it (`dismiss`). The card is the id the feed gave it.
package struct CardReport: Sendable, Equatable {
    package enum Action: String, Sendable, CaseIterable {
        case view, click, dismiss
    }

    package var action: Action
    package var card: String
    package var time: Date

    package init(action: Action, card: String, time: Date) {
        self.action = action
        self.card = card
        self.time = time
    }

    var json: JSONValue {
        .object([
            JSONMember("action", .string(action.rawValue)), JSONMember("card", .string(card)),
            JSONMember("time", .string(WireTime.format(time))),
        ])
    }

    init(wire value: JSONValue, path: String) throws(WireError) {
        let object = try WireObject(value, path: path)
        let actionText = try object.string("action")
        guard let action = Action(rawValue: actionText) else {
            throw WireError(reason: "\(path).action: expected view, click or dismiss, got \(actionText)")
        }
        guard let time = try object.optionalDate("time") else { throw WireError(reason: "\(path).time: missing") }
        self.init(action: action, card: try object.string("card"), time: time)
    }
}

/// `geofence`: the installation's device entered or left a geofence of a set it monitors (`geofence_enter`,
/// `geofence_exit`; docs/geofences.md), with the device's time.
package struct GeofenceReport: Sendable, Equatable {
    package enum Kind: String, Sendable, CaseIterable {
        case enter, exit
    }

    package var kind: Kind
    package var set: String
    package var geofence: String
    package var time: Date

    package init(kind: Kind, set: String, geofence: String, time: Date) {
        (self.kind, self.set, self.geofence, self.time) = (kind, set, geofence, time)
    }

    var json: JSONValue {
        .object([
            JSONMember("kind", .string(kind.rawValue)), JSONMember("set", .string(set)), JSONMember("geofence", .string(geofence)),
            JSONMember("time", .string(WireTime.format(time))),
        ])
    }

    init(wire value: JSONValue, path: String) throws(WireError) {
        let object = try WireObject(value, path: path)
        let kindText = try object.string("kind")
        guard let kind = Kind(rawValue: kindText) else { throw WireError(reason: "\(path).kind: expected enter or exit, got \(kindText)") }
        guard let time = try object.optionalDate("time") else { throw WireError(reason: "\(path).time: missing") }
        self.init(kind: kind, set: try object.string("set"), geofence: try object.string("geofence"), time: time)
    }
}
