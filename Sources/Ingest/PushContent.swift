import Foundation
import Shared

/// The notification of a transactional push (`POST /v1/sends/push`): the fields a push template has
/// (docs/configuration.md, "Push templates"), given as they are (no placeholders), as JSON types where a template writes
/// text: `badge` an integer (or `"+N"` to add to the installation's count), `relevance_score` a number, `ttl` whole
/// seconds. docs/openapi.yaml says the same, exactly.
enum PushContent {
    /// A push template's fields (`MessageChannel.push`): texts of 1 to 2048 characters (APNs takes 4 KB in all: a longer
    /// notification fails as `payload_too_large`), but for these URLs and numbers.
    static let urls = ["deeplink", "image_url"]
    static let numbers = ["badge", "relevance_score", "ttl"]
    static let fields = Set(MessageChannel.push.fields.optional)
    static let maxText = 2_048
    /// The most custom payload keys.
    static let maxPayloadKeys = 50

    /// The notification's fields as the send's content (the texts a template would have rendered); every problem
    /// reported with its path.
    static func notification(_ value: JSONValue, path: String, problems: inout [Problem]) -> [String: String] {
        let fields = Fields(value, path: path, known: Self.fields)
        problems += fields.problems
        guard fields.isObject else { return [:] }
        var content: [String: String] = [:]
        for name in Self.fields.sorted() {
            guard let field = fields[name] else { continue }
            do throws(Violation) {
                content[name] = try text(name, field)
            } catch {
                problems.append(error.at("\(path).\(name)"))
            }
        }
        let background = content["push_type"] == "background"
        if !background, content["title"] == nil, content["body"] == nil, content["badge"] == nil, fields.problems.isEmpty,
            !problems.contains(where: { $0.path.hasPrefix(path) })
        {
            problems.append(
                Violation("missing_field", "a notification needs a title, a body or a badge (or push_type background)").at(path))
        }
        if background, content["priority"] == "high" {
            problems.append(Violation("invalid_value", "a background push cannot be high priority (APNs refuses it)").at("\(path).priority"))
        }
        if background, content["badge"] != nil {
            problems.append(
                Violation(
                    "invalid_value", "a background push cannot set the badge (APNs); without push_type, a badge alone sets it silently"
                ).at("\(path).badge"))
        }
        if let collapse = content["collapse_id"],
            collapse.utf8.count > PushPayloadRules.maxCollapseIDBytes || !collapse.utf8.allSatisfy({ $0 >= 0x20 && $0 < 0x7F })
        {
            problems.append(
                Violation("invalid_value", "collapse_id is 1 to 64 printable ASCII characters (APNs' apns-collapse-id)")
                    .at("\(path).collapse_id"))
        }
        return content
    }

    /// A field's value as the text a template would hold.
    static func text(_ name: String, _ value: JSONValue) throws(Violation) -> String {
        switch (name, value) {
        case ("badge", .number(let literal)):
            guard let number = Double(literal), number == number.rounded(), (0...99_999).contains(number) else {
                throw Violation("invalid_value", "badge is a whole number from 0 to 99999, or \"+N\" to add N to the installation's count")
            }
            return String(Int(number))
        case ("badge", .string(let text)):
            guard text.hasPrefix("+"), case .add? = PushOptions.badge(text) else {
                throw Violation("invalid_value", "badge is a whole number from 0 to 99999, or \"+N\" (1 to 99999) to add to the installation's count")
            }
            return text
        case ("relevance_score", .number(let literal)):
            guard let score = Double(literal), (0...1).contains(score) else {
                throw Violation("invalid_value", "relevance_score is a number from 0 to 1")
            }
            return JSONValue.literal(score)
        case ("ttl", .number(let literal)):
            guard let seconds = Double(literal), seconds == seconds.rounded(), (0...PushOptions.maxTTL).contains(seconds) else {
                throw Violation("invalid_value", "ttl is a whole number of seconds, 0 to \(Int(PushOptions.maxTTL)) (28 days)")
            }
            return "\(Int(seconds))s"
        case (_, .string(let text)) where !numbers.contains(name):
            guard !text.isEmpty, text.unicodeScalars.count <= maxText else {
                throw Violation("invalid_value", "\(name) has 1 to \(maxText) characters")
            }
            if urls.contains(name), !Rules.isURLShaped(text) {
                throw Violation("invalid_url", "\(name) is a URL with a scheme and a host, e.g. https://example.com/a.png")
            }
            if let problem = PushOptions.problem(name, text) { throw Violation("invalid_value", "\(name): \(problem)") }
            return text
        default:
            let expected = name == "badge" ? "a number or \"+N\"" : numbers.contains(name) ? "a number" : "a string"
            throw Violation("invalid_type", "\(name) is \(expected), got \(value.typeName)")
        }
    }

    /// The custom payload: at most 50 keys, none reserved by APNs, FCM or Herald (`PushPayloadRules`), values of any JSON
    /// type but null.
    static func payload(_ value: JSONValue, path: String, problems: inout [Problem]) -> [String: JSONValue] {
        guard case .object(let members) = value else {
            problems.append(Violation("invalid_type", "payload is an object").at(path))
            return [:]
        }
        guard members.count <= maxPayloadKeys else {
            problems.append(Violation("too_many_keys", "a payload has at most \(maxPayloadKeys) keys").at(path))
            return [:]
        }
        var payload: [String: JSONValue] = [:]
        for member in members {
            if let reason = PushPayloadRules.reservedKey(member.key) {
                problems.append(Violation("reserved_name", reason).at("\(path).\(member.key)"))
            } else if member.value == .null {
                problems.append(Violation("invalid_type", "a payload value is not null").at("\(path).\(member.key)"))
            } else {
                payload[member.key] = member.value
            }
        }
        return payload
    }
}
