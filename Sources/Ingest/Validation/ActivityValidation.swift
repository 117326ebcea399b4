import Foundation
import Shared

/// One item of `POST /v1/app/activity`, validated whole (like an event: one problem drops the item, and every problem
/// of it is reported). Its record id is derived from what it reports (`id`), so that the same report sent again — an
/// SDK retrying a flush, a queue replayed after days — is applied once without any idempotency key.
package enum ActivityItem: Sendable, Equatable {
    case session(SessionReport)
    case pushOpen(PushOpenReport)
    case inApp(InAppReport)
    case card(CardReport)
    case geofence(GeofenceReport)

    /// The longest session an app may report: a week (a kiosk app stays in the foreground for days).
    package static let maxSessionSeconds = 7.0 * 86_400

    package var payload: IngestPayload {
        switch self {
        case .session(let session): .session(session)
        case .pushOpen(let open): .pushOpen(open)
        case .inApp(let report): .inApp(report)
        case .card(let report): .contentCard(report)
        case .geofence(let report): .geofence(report)
        }
    }

    /// How far past the server's clock a report's time may be: a time later than this is the device's clock being
    /// wrong, or a report forged to sit beyond every retention, and is read as the time the server received it.
    package static let futureTolerance: TimeInterval = 3600
    /// How far back a report's time is kept: an earlier one reads as this old. SDKs flush what they queued offline
    /// within days; 30 days is the dedupe window, past which a replay could not be told from a new report anyway.
    package static let pastWindow: TimeInterval = 30 * 86_400

    /// The report with its time held to [receivedAt − `pastWindow`, receivedAt + `futureTolerance`] (a time past the
    /// window's end reads as `receivedAt`). Its record id is taken from the time as the app sent it, before this, so
    /// that the same report sent again is still one.
    package func clamped(receivedAt: Date) -> ActivityItem {
        func bounded(_ time: Date) -> Date {
            if time > receivedAt.addingTimeInterval(Self.futureTolerance) { return receivedAt }
            return max(time, receivedAt.addingTimeInterval(-Self.pastWindow))
        }
        switch self {
        case .session(var report):
            report.time = bounded(report.time)
            return .session(report)
        case .pushOpen(var report):
            report.time = bounded(report.time)
            return .pushOpen(report)
        case .inApp(var report):
            report.time = bounded(report.time)
            return .inApp(report)
        case .card(var report):
            report.time = bounded(report.time)
            return .card(report)
        case .geofence(var report):
            report.time = bounded(report.time)
            return .geofence(report)
        }
    }

    /// The record id, unique per installation and report.
    package func id(installationID: String) -> String {
        switch self {
        case .session(let session): "app:session_\(session.kind.rawValue):\(installationID):\(session.sessionID)"
        case .pushOpen(let open):
            "app:push_open:\(installationID):\(open.sendID)\(open.action.map { ":\($0)" } ?? "")\(open.page.map { ":page:\($0)" } ?? "")"
        // An in-app message may show again: each report is one at its time.
        case .inApp(let report):
            "app:in_app_\(report.action.rawValue):\(installationID):\(report.message):\(wire: report.time)\(report.button.map { ":\($0)" } ?? "")"
        // A card counts one view, one click and one dismissal per profile: the first report of each is the one.
        case .card(let report): "app:card_\(report.action.rawValue):\(installationID):\(report.card)"
        // A device enters and leaves a geofence many times: each report is one at its time.
        case .geofence(let report):
            "app:geofence_\(report.kind.rawValue):\(installationID):\(report.set):\(report.geofence):\(wire: report.time)"
        }
    }

    static let fields: [String: Set<String>] = [
        "session_start": ["type", "session_id", "time"],
        "session_end": ["type", "session_id", "time", "duration"],
        "push_open": ["type", "send_id", "action", "page", "time"],
        "in_app_impression": ["type", "message_id", "time"],
        "in_app_click": ["type", "message_id", "button_id", "time"],
        "in_app_dismiss": ["type", "message_id", "time"],
        "card_view": ["type", "card_id", "time"],
        "card_click": ["type", "card_id", "time"],
        "card_dismiss": ["type", "card_id", "time"],
        "geofence_enter": ["type", "set_id", "geofence_id", "time"],
        "geofence_exit": ["type", "set_id", "geofence_id", "time"],
    ]

    static let types =
        "session_start, session_end, push_open, in_app_impression, in_app_click, in_app_dismiss, card_view, card_click, card_dismiss, geofence_enter or geofence_exit"

    /// Validates `{"type": "session_start" | "session_end" | "push_open" | "in_app_…" | "card_…", "time", …}`.
    package static func validate(_ value: JSONValue, path: String) -> (item: ActivityItem?, problems: ProblemList) {
        guard case .object(let members) = value else {
            return (nil, ProblemList([Violation("invalid_type", "an activity item is an object").at(path)]))
        }
        var problems = ProblemList()
        guard let typeValue = members.first(where: { $0.key == "type" })?.value else {
            return (nil, ProblemList([Violation("missing_field", "type is required: \(types)").at("\(path).type")]))
        }
        guard case .string(let type) = typeValue, let known = fields[type] else {
            return (nil, ProblemList([Violation("invalid_value", "type is \(types)").at("\(path).type")]))
        }
        var values: [String: JSONValue] = [:]
        for member in members {
            if known.contains(member.key) {
                values[member.key] = member.value
            } else {
                problems.append(
                    Violation("unknown_field", "a \(type) has \(known.sorted().joined(separator: ", "))").at("\(path).\(member.key)"))
            }
        }
        func string(_ name: String, required: Bool = true, _ rule: (String) throws(Violation) -> String) -> String? {
            do throws(Violation) {
                switch values[name] {
                case nil:
                    if required { throw Violation("missing_field", "\(name) is required") }
                    return nil
                case .string(let text)?: return try rule(text)
                case let other?: throw Violation("invalid_type", "\(name) is a string, got \(other.typeName)")
                }
            } catch {
                problems.append(error.at("\(path).\(name)"))
                return nil
            }
        }
        func date() -> Date? {
            guard let text = string("time", { text throws(Violation) in text }) else { return nil }
            do throws(Violation) {
                return try Rules.date(text)
            } catch {
                problems.append(error.at("\(path).time"))
                return nil
            }
        }
        let item: ActivityItem?
        switch type {
        case "in_app_impression", "in_app_click", "in_app_dismiss":
            let message = string("message_id", Rules.configID)
            let button = string("button_id", required: false, Rules.actionID)
            let time = date()
            let action = InAppReport.Action(rawValue: String(type.dropFirst("in_app_".count)))!
            item = message.flatMap { message in time.map { .inApp(InAppReport(action: action, message: message, button: button, time: $0)) } }
        case "card_view", "card_click", "card_dismiss":
            let card = string("card_id", Self.cardID)
            let time = date()
            let action = CardReport.Action(rawValue: String(type.dropFirst("card_".count)))!
            item = card.flatMap { card in time.map { .card(CardReport(action: action, card: card, time: $0)) } }
        case "geofence_enter", "geofence_exit":
            let set = string("set_id", Rules.configID)
            let geofence = string("geofence_id", Rules.configID)
            let time = date()
            let kind: GeofenceReport.Kind = type == "geofence_enter" ? .enter : .exit
            if let set, let geofence, let time { item = .geofence(GeofenceReport(kind: kind, set: set, geofence: geofence, time: time)) } else { item = nil }
        case "push_open":
            let sendID = string("send_id", Self.sendID)
            let action = string("action", required: false, Rules.actionID)
            let page = string("page", required: false, Rules.actionID)
            if action != nil, page != nil {
                problems.append(Violation("invalid_value", "a push_open names a button (action) or a story page (page), not both").at("\(path).page"))
            }
            let time = date()
            item = sendID.flatMap { sendID in
                time.map { .pushOpen(PushOpenReport(sendID: sendID, action: action, page: action == nil ? page : nil, time: $0)) }
            }
        default:
            let sessionID = string("session_id", Self.sessionID)
            let time = date()
            var duration: Double?
            if let value = values["duration"] {
                if case .number(let literal) = value, let seconds = Double(literal), (0...maxSessionSeconds).contains(seconds) {
                    duration = seconds
                } else {
                    problems.append(
                        Violation("out_of_range", "duration is a number of seconds from 0 to \(Int(maxSessionSeconds))").at("\(path).duration"))
                }
            }
            let kind: SessionReport.Kind = type == "session_start" ? .start : .end
            item = sessionID.flatMap { id in time.map { .session(SessionReport(kind: kind, sessionID: id, time: $0, duration: duration)) } }
        }
        return problems.isEmpty ? (item, problems) : (nil, problems)
    }

    /// A session id: 1 to 128 visible ASCII characters (the SDKs' are UUIDs).
    static func sessionID(_ text: String) throws(Violation) -> String {
        guard Rules.isVisibleASCII(text, length: 1...128) else {
            throw Violation("invalid_session_id", "session ids are 1 to 128 visible ASCII characters")
        }
        return text
    }

    /// A content card's id, as the feed gave it: 32 lowercase hex digits.
    static func cardID(_ text: String) throws(Violation) -> String {
        guard text.isLowercaseHex(count: 32) else {
            throw Violation("invalid_card_id", "card ids are 32 lowercase hex digits, as the feed gives them")
        }
        return text
    }

    /// A send id, as the notification carries it (`i`, `herald_send_id`): 1 to 128 visible ASCII characters.
    static func sendID(_ text: String) throws(Violation) -> String {
        guard Rules.isVisibleASCII(text, length: 1...128) else {
            throw Violation("invalid_send_id", "send ids are 1 to 128 visible ASCII characters")
        }
        return text
    }
}
