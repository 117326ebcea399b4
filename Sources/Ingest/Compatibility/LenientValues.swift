import Foundation
import Shared

/// The value rules of the compatibility APIs (Braze's `/users/track`, Segment's Tracking API), which follow Braze's
/// rules where Herald's own API refuses (braze-rules §2–3, docs/ingest.md "Compatibility"): a value beyond a limit is
/// cut to the limit and the cut is reported in `adjusted`; only what cannot be kept at all is dropped and reported in
/// `problems`. Never the whole event for one bad property.
struct LenientValues {
    /// Braze's limit on strings (values, keys, product ids): 255 characters (code points, as Herald counts).
    static let maxString = 255
    /// The most items an array attribute may arrive with; the orchestrator keeps at most the attribute's own maximum
    /// (25 unless the project's configuration raises it, up to this).
    static let maxArrayItems = 100
    /// Braze's reserved event and purchase property keys (braze-rules §3.1, rule 6).
    static let reservedPropertyKeys: Set<String> = ["time", "product_id", "quantity", "event_name", "price", "currency"]

    /// What was dropped (each with why).
    var problems = ProblemList()
    /// What was kept changed (a string cut to 255 characters, an array cut, a name shortened).
    var adjusted: [Problem] = []
    /// Braze mode: the reserved property keys are refused.
    var reservesBrazeKeys = false

    mutating func drop(_ path: String, _ code: String, _ message: String) {
        problems.append(Problem(path: path, code: code, message: message))
    }

    mutating func adjust(_ path: String, _ code: String, _ message: String) {
        adjusted.append(Problem(path: path, code: code, message: message))
    }

    /// `text` cut to 255 characters (reported), or nil (reported) when it is empty.
    mutating func string(_ text: String, path: String) -> String? {
        guard !text.isEmpty else {
            drop(path, "empty_string", "strings cannot be empty")
            return nil
        }
        let count = text.unicodeScalars.count
        guard count > Self.maxString else { return text }
        adjust(path, "string_truncated", "cut from \(count) to \(Self.maxString) characters")
        return String(String.UnicodeScalarView(text.unicodeScalars.prefix(Self.maxString)))
    }

    /// A free-text name as Herald's (`NameMapping`); a shortened one is reported.
    mutating func name(_ text: String, as kind: NameMapping.Kind, path: String) -> String {
        let mapped = NameMapping.map(text, as: kind)
        if mapped.shortened {
            adjust(path, "name_shortened", "\"\(String(text.prefix(40)))\" is stored as \(mapped.name)")
        }
        return mapped.name
    }

    /// A scalar: strings (dates when they are ISO-8601 with a zone, rule 5), numbers, booleans; nil (reported) for
    /// anything else.
    mutating func scalar(_ value: JSONValue, path: String) -> AttributeValue? {
        switch value {
        case .string(let text):
            if text.utf8.count >= 20, let date = WireTime.parse(text) { return .date(date) }
            return string(text, path: path).map(AttributeValue.string)
        case .number(let literal):
            do {
                return try Rules.number(literal)
            } catch {
                drop(path, error.code, error.message)
                return nil
            }
        case .bool(let flag): return .bool(flag)
        case .null:
            drop(path, "null_value", "null is not a value here")
            return nil
        case .array, .object:
            drop(path, "invalid_type", "expected a string, a number or a boolean, got \(value.typeName)")
            return nil
        }
    }

    /// An array of strings for a profile attribute: numbers and booleans become their text, other items are dropped;
    /// more than 100 items keep the first 100 (braze-rules §2.3: "a full set keeps the first N").
    mutating func stringArray(_ items: [JSONValue], path: String) -> [String] {
        var strings: [String] = []
        for (index, item) in items.enumerated() {
            let itemPath = "\(path)[\(index)]"
            switch item {
            case .string(let text): if let kept = string(text, path: itemPath) { strings.append(kept) }
            case .number(let literal): strings.append(literal)
            case .bool(let flag): strings.append(flag ? "true" : "false")
            default: drop(itemPath, "invalid_item", "array items are strings, numbers or booleans, got \(item.typeName)")
            }
        }
        if strings.count > Self.maxArrayItems {
            adjust(path, "array_truncated", "\(strings.count) items, the first \(Self.maxArrayItems) kept")
            strings.removeLast(strings.count - Self.maxArrayItems)
        }
        return strings
    }

    /// A custom attribute's operation (Braze's forms): a value sets it, `null` removes it, `{"inc": n}` adds to an
    /// integer, `{"add": […], "remove": […]}` edits an array. Nil (reported) when nothing of it can be kept.
    mutating func attributeEdit(_ value: JSONValue, path: String) -> AttributeEdit? {
        switch value {
        case .null: return .remove
        case .array(let items): return .set(.stringArray(stringArray(items, path: path)))
        case .object(let members):
            if members.count == 1, members[0].key == "inc" {
                guard case .number(let literal) = members[0].value, case .integer(let amount)? = try? Rules.number(literal) else {
                    drop("\(path).inc", "invalid_increment", "inc takes a whole number (positive or negative)")
                    return nil
                }
                return .increment(amount)
            }
            var add: [String] = []
            var remove: [String] = []
            for member in members {
                guard member.key == "add" || member.key == "remove" else {
                    drop(path, "unsupported_value", "objects are {\"inc\": n} or {\"add\": […], \"remove\": […]}; got \(member.key)")
                    return nil
                }
                guard case .array(let items) = member.value else {
                    drop("\(path).\(member.key)", "invalid_type", "\(member.key) takes an array")
                    return nil
                }
                let strings = stringArray(items, path: "\(path).\(member.key)")
                if member.key == "add" { add = strings } else { remove = strings }
            }
            guard !members.isEmpty else {
                drop(path, "unsupported_value", "an empty object is not a value")
                return nil
            }
            return .arrayEdit(add: add, remove: remove)
        default:
            return scalar(value, path: path).map(AttributeEdit.set)
        }
    }

    /// Event or purchase properties: names mapped (`NameMapping`), values kept to Herald's limits (nested objects to
    /// 3 levels of at most 20 names, arrays of at most 25 strings or objects); beyond them, cut and reported.
    mutating func properties(_ value: JSONValue, path: String) -> [(String, AttributeValue)] {
        guard case .object = value else {
            drop(path, "invalid_type", "properties are an object, got \(value.typeName)")
            return []
        }
        return object(value, path: path, depth: 0)
    }

    private mutating func object(_ value: JSONValue, path: String, depth: Int) -> [(String, AttributeValue)] {
        guard case .object(let members) = value else { return [] }
        var result: [(String, AttributeValue)] = []
        var slots: [String: Int] = [:]
        for member in members {
            let memberPath = "\(path).\(member.key)"
            if depth == 0, reservesBrazeKeys, Self.reservedPropertyKeys.contains(member.key) {
                drop(memberPath, "reserved_name", "\(member.key) is reserved by Braze (time, product_id, quantity, event_name, price, currency)")
                continue
            }
            if member.key.hasPrefix("$") {
                drop(memberPath, "reserved_name", "property names cannot start with '$'")
                continue
            }
            guard let property = propertyValue(member.value, path: memberPath, depth: depth) else { continue }
            let name = self.name(member.key, as: .attribute, path: memberPath)
            if let slot = slots[name] {
                adjust(memberPath, "name_collision", "another property of this object is also named \(name): the later one is kept")
                result[slot] = (name, property)
            } else if slots.count == Limits.eventObjectAttributes {
                drop(memberPath, "too_many_attributes", "an object keeps its first \(Limits.eventObjectAttributes) properties")
            } else {
                slots[name] = result.count
                result.append((name, property))
            }
        }
        return result
    }

    private mutating func propertyValue(_ value: JSONValue, path: String, depth: Int) -> AttributeValue? {
        switch value {
        case .object:
            guard depth + 1 <= Limits.eventObjectDepth else {
                drop(path, "too_deep", "objects nest at most \(Limits.eventObjectDepth) levels")
                return nil
            }
            return .object(object(value, path: path, depth: depth + 1))
        case .array(var items):
            if items.count > Limits.eventArrayItems {
                adjust(path, "array_truncated", "\(items.count) items, the first \(Limits.eventArrayItems) kept")
                items.removeLast(items.count - Limits.eventArrayItems)
            }
            if items.contains(where: { if case .object = $0 { true } else { false } }) {
                guard depth + 1 <= Limits.eventObjectDepth else {
                    drop(path, "too_deep", "objects nest at most \(Limits.eventObjectDepth) levels")
                    return nil
                }
                var objects: [[(String, AttributeValue)]] = []
                for (index, item) in items.enumerated() {
                    guard case .object = item else {
                        drop("\(path)[\(index)]", "mixed_array", "an array of objects holds only objects")
                        continue
                    }
                    objects.append(object(item, path: "\(path)[\(index)]", depth: depth + 1))
                }
                return .objectArray(objects)
            }
            return .stringArray(stringArray(items, path: path))
        default:
            return scalar(value, path: path)
        }
    }
}
