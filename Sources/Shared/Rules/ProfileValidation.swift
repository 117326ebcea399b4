import Foundation

/// Profile edits are validated per operation: an invalid one is dropped and reported, the others are kept.
package enum ProfileValidation {
    /// The native fields: request name → wire name.
    package static let natives: [String: String] = [
        "$email_address": "email", "$email_marketing": "email_marketing", "$phone_number": "phone_number",
        "$sms_marketing": "sms_marketing", "$language": "language", "$region": "region", "$timezone": "timezone",
    ]

    /// Validates an `attributes` object. `identified` says whether the profile has a custom ID (email and phone need
    /// one).
    package static func validate(_ attributes: JSONValue, path: String, identified: Bool) -> (ProfileEdit, [Problem]) {
        var edit = ProfileEditBuilder()
        var problems: [Problem] = []
        guard case .object(let members) = attributes else {
            return (ProfileEdit(), [Violation("invalid_type", "attributes must be an object").at(path)])
        }
        for member in members {
            let memberPath = "\(path).\(member.key)"
            do {
                if member.key.hasPrefix("$") {
                    let (name, value) = try native(member.key, member.value, identified: identified)
                    edit.setNative(name, value)
                } else {
                    let name = try Rules.attributeName(member.key)
                    edit.setAttribute(name, try attributeEdit(member.value))
                }
            } catch {
                problems.append(error.at(memberPath))
            }
        }
        return (edit.edit, problems)
    }

    package static func native(_ key: String, _ value: JSONValue, identified: Bool) throws(Violation) -> (String, JSONValue) {
        guard let name = natives[key] else {
            let known = natives.keys.sorted().joined(separator: ", ")
            throw Violation("unknown_native_attribute", "\(key) is not a native attribute (known: \(known))")
        }
        if (name == "email" || name == "phone_number") && !identified {
            throw Violation("not_identified", "\(key) can only be set on an identified profile (with a custom ID)")
        }
        switch (name, value) {
        case ("email_marketing", .string(let text)), ("sms_marketing", .string(let text)):
            return (name, .string(try Rules.marketingState(text)))
        case ("email_marketing", _), ("sms_marketing", _):
            throw Violation("invalid_subscription_state", "expected \"subscribed\" or \"unsubscribed\"")
        case (_, .null):
            return (name, .null)
        case ("email", .string(let text)): return (name, .string(try Rules.email(text)))
        case ("phone_number", .string(let text)): return (name, .string(try Rules.phone(text)))
        case ("language", .string(let text)): return (name, .string(try Rules.language(text)))
        case ("region", .string(let text)): return (name, .string(try Rules.region(text)))
        case ("timezone", .string(let text)): return (name, .string(try Rules.timeZone(text)))
        default:
            throw Violation("invalid_type", "\(key) must be a string or null, got \(value.typeName)")
        }
    }

    static func attributeEdit(_ value: JSONValue) throws(Violation) -> AttributeEdit {
        switch value {
        case .null: return .remove
        case .string(let text): return .set(.string(try Rules.profileString(text)))
        case .number(let literal): return .set(try Rules.number(literal))
        case .bool(let flag): return .set(.bool(flag))
        case .array(let items): return .set(.stringArray(try stringArray(items, limit: Limits.stringArrayItems)))
        case .object(let members):
            if let typed = try typedValue(members) { return .set(typed) }
            var add: [String]?
            var remove: [String]?
            for member in members {
                guard case .array(let items) = member.value else {
                    throw Violation("invalid_type", "\(member.key) takes an array of strings")
                }
                switch member.key {
                case "$add": add = try stringArray(items, limit: Limits.arrayEditItems)
                case "$remove": remove = try stringArray(items, limit: Limits.arrayEditItems)
                default:
                    throw Violation(
                        "unsupported_value",
                        "objects are {\"$date\": …}, {\"$url\": …} or {\"$add\": […], \"$remove\": […]}; got \(member.key)")
                }
            }
            guard add != nil || remove != nil else {
                throw Violation("unsupported_value", "an empty object is not a value")
            }
            return .arrayEdit(add: add ?? [], remove: remove ?? [])
        }
    }

    /// `{"$date": …}` and `{"$url": …}`, or nil for other objects.
    static func typedValue(_ members: [JSONMember]) throws(Violation) -> AttributeValue? {
        guard members.count == 1, let member = members.first, member.key == "$date" || member.key == "$url" else {
            return nil
        }
        guard case .string(let text) = member.value else {
            throw Violation("invalid_type", "\(member.key) takes a string")
        }
        return member.key == "$date" ? .date(try Rules.date(text)) : .url(try Rules.url(text))
    }

    static func stringArray(_ items: [JSONValue], limit: Int) throws(Violation) -> [String] {
        guard items.count <= limit else {
            throw Violation("too_many_items", "at most \(limit) items (got \(items.count))")
        }
        var strings: [String] = []
        for (index, item) in items.enumerated() {
            guard case .string(let text) = item else {
                throw Violation("invalid_item", "item \(index) must be a string, got \(item.typeName)")
            }
            do {
                strings.append(try Rules.profileString(text))
            } catch {
                throw Violation(error.code, "item \(index): \(error.message)")
            }
        }
        return strings
    }
}
