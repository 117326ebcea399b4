import Foundation

/// An event's outcome: valid, or dropped with every problem found.
package enum EventOutcome: Sendable, Equatable {
    case valid(ValidatedEvent)
    case invalid([Problem])
}

/// Events are all-or-nothing: one invalid attribute drops the event, and every problem is reported.
package enum EventValidation {
    /// Validates `{"name": …, "id"?: …, "time"?: …, "attributes"?: {…}}`.
    package static func validate(_ value: JSONValue, path: String) -> EventOutcome {
        guard case .object(let members) = value else {
            return .invalid([Violation("invalid_type", "an event is an object").at(path)])
        }
        var problems: [Problem] = []
        var name: String?
        var id: String?
        var time: Date?
        var attributes: JSONValue = .object([])
        for member in members {
            let memberPath = "\(path).\(member.key)"
            do throws(Violation) {
                switch (member.key, member.value) {
                case ("name", .string(let text)): name = try Rules.eventName(text)
                case ("id", .string(let text)): id = try Rules.clientID(text)
                case ("time", .string(let text)): time = try Rules.date(text)
                case ("attributes", .object): attributes = member.value
                case ("name", _), ("id", _), ("time", _), ("attributes", _):
                    throw Violation("invalid_type", "\(member.key) has the wrong type (\(member.value.typeName))")
                default:
                    throw Violation("unknown_field", "events have name, id, time and attributes")
                }
            } catch {
                problems.append(error.at(memberPath))
            }
        }
        if name == nil && !problems.contains(where: { $0.path == "\(path).name" }) {
            problems.append(Violation("missing_field", "an event needs a name").at("\(path).name"))
        }
        var label: String?
        var tags: [String]?
        let reserved = { (key: String, value: JSONValue, _: String) throws(Violation) -> Void in
            switch key {
            case "$label":
                guard case .string(let text) = value else {
                    throw Violation("invalid_type", "$label is a string")
                }
                label = try Rules.eventString(text, limit: Limits.label)
            case "$tags":
                tags = try Self.tags(value)
            default:
                throw Violation("reserved_name", "the only '$' attributes are $label and $tags, at the root")
            }
        }
        let validated = object(attributes, path: "\(path).attributes", depth: 0, problems: &problems, reserved: reserved)
        let event = ValidatedEvent(
            name: name ?? "", id: id, time: time, label: label, tags: tags, attributes: validated)
        return problems.isEmpty ? .valid(event) : .invalid(problems)
    }

    /// An attributes object at `depth` (root = 0): names lowercased (a later one replaces an earlier one of the same
    /// name), at most 20 attributes, values checked. `reserved` handles `$` keys (only at the root).
    ///
    /// The cap is checked first, on the distinct names, and an object over it is refused without reading its values:
    /// the work is linear in the request, whatever it holds.
    private static func object(
        _ value: JSONValue, path: String, depth: Int, problems: inout [Problem],
        reserved: ((String, JSONValue, String) throws(Violation) -> Void)? = nil
    ) -> [(String, AttributeValue)] {
        guard case .object(let members) = value else {
            problems.append(Violation("invalid_type", "attributes are an object").at(path))
            return []
        }
        if members.count > Limits.eventObjectAttributes {
            let names = Set(members.lazy.filter { !$0.key.hasPrefix("$") }.compactMap { try? Rules.attributeName($0.key) })
            if names.count > Limits.eventObjectAttributes {
                problems.append(
                    Violation("too_many_attributes", "an object has at most 20 attributes (got \(names.count))").at(path))
                return []
            }
        }
        var result: [(String, AttributeValue)] = []
        var slots: [String: Int] = [:]
        var count = 0
        for member in members {
            let memberPath = "\(path).\(member.key)"
            do throws(Violation) {
                if member.key.hasPrefix("$") {
                    guard let reserved else {
                        throw Violation("reserved_name", "$label and $tags are only allowed at the root")
                    }
                    try reserved(member.key, member.value, memberPath)
                    continue
                }
                let name = try Rules.attributeName(member.key)
                guard let attribute = attributeValue(member.value, path: memberPath, depth: depth, problems: &problems)
                else { continue }
                if let existing = slots[name] {
                    result[existing] = (name, attribute)
                } else {
                    slots[name] = result.count
                    result.append((name, attribute))
                    count += 1
                }
            } catch {
                problems.append(error.at(memberPath))
            }
        }
        if count > Limits.eventObjectAttributes {
            problems.append(
                Violation("too_many_attributes", "an object has at most 20 attributes (got \(count))").at(path))
        }
        return result
    }

    private static func attributeValue(_ value: JSONValue, path: String, depth: Int, problems: inout [Problem])
        -> AttributeValue?
    {
        do throws(Violation) {
            switch value {
            case .string(let text): return .string(try Rules.eventString(text))
            case .number(let literal): return try Rules.number(literal)
            case .bool(let flag): return .bool(flag)
            case .null: throw Violation("invalid_type", "null is not an event attribute value")
            case .object(let members):
                if let typed = try ProfileValidation.typedValue(members) { return typed }
                return .object(try nested(value, path: path, depth: depth, problems: &problems))
            case .array(let items):
                guard items.count <= Limits.eventArrayItems else {
                    throw Violation("too_many_items", "arrays have at most 25 items (got \(items.count))")
                }
                if items.allSatisfy({ if case .string = $0 { true } else { false } }) {
                    var strings: [String] = []
                    for (index, item) in items.enumerated() {
                        guard case .string(let text) = item else { continue }
                        do {
                            strings.append(try Rules.eventString(text))
                        } catch {
                            problems.append(error.at("\(path)[\(index)]"))
                        }
                    }
                    return .stringArray(strings)
                }
                if items.allSatisfy({ if case .object = $0 { true } else { false } }) {
                    var objects: [[(String, AttributeValue)]] = []
                    for (index, item) in items.enumerated() {
                        objects.append(try nested(item, path: "\(path)[\(index)]", depth: depth, problems: &problems))
                    }
                    return .objectArray(objects)
                }
                if items.contains(where: { if case .array = $0 { true } else { false } }) {
                    throw Violation("nested_array", "arrays cannot contain arrays")
                }
                throw Violation("mixed_array", "an array holds only strings or only objects")
            }
        } catch {
            problems.append(error.at(path))
            return nil
        }
    }

    /// An object value one level below `depth`.
    private static func nested(_ value: JSONValue, path: String, depth: Int, problems: inout [Problem]) throws(Violation)
        -> [(String, AttributeValue)]
    {
        guard depth + 1 <= Limits.eventObjectDepth else {
            throw Violation("too_deep", "objects nest at most 3 levels")
        }
        return object(value, path: path, depth: depth + 1, problems: &problems)
    }

    private static func tags(_ value: JSONValue) throws(Violation) -> [String] {
        guard case .array(let items) = value else { throw Violation("invalid_type", "$tags is an array of strings") }
        guard items.count <= Limits.tags else {
            throw Violation("too_many_items", "$tags has at most 10 items (got \(items.count))")
        }
        var tags: [String] = []
        for (index, item) in items.enumerated() {
            guard case .string(let text) = item else {
                throw Violation("invalid_item", "tag \(index) must be a string")
            }
            do {
                let tag = try Rules.eventString(text, limit: Limits.tagLength).lowercased()
                if !tags.contains(tag) { tags.append(tag) }
            } catch {
                throw Violation(error.code, "tag \(index): \(error.message)")
            }
        }
        return tags
    }
}
