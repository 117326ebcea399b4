import Foundation

/// One operation on a custom attribute.
package enum AttributeEdit: Sendable, Equatable {
    case set(AttributeValue)
    case remove
    case arrayEdit(add: [String], remove: [String])
    /// Adds to an integer attribute; creates it with the amount when unset; ignored on another type (Braze's
    /// `{"inc": n}`, braze-rules §2.2).
    case increment(Int64)
}

/// The valid operations of a profile edit, in request order (a later write to the same name replaces an earlier one,
/// names compared lowercased).
package struct ProfileEdit: Sendable, Equatable {
    /// Native fields under their wire names (`email`, `email_marketing`, `phone_number`, `sms_marketing`, `language`,
    /// `region`, `timezone`); `.null` erases.
    package var natives: [JSONMember] = []
    package var attributes: [(name: String, edit: AttributeEdit)] = []

    package init() {}

    package var isEmpty: Bool { natives.isEmpty && attributes.isEmpty }

    /// `{"email": …, "custom_attributes": {"age.i": 26, "gone": null, "list.a": {"$add": […], "$remove": […]},
    /// "visits.i": {"$inc": 1}}}`.
    package var json: JSONValue {
        var members = natives
        if !attributes.isEmpty {
            members.append(
                JSONMember(
                    "custom_attributes",
                    .object(
                        attributes.map { name, edit in
                            switch edit {
                            case .set(let value): JSONMember("\(name).\(value.suffix)", value.json)
                            case .remove: JSONMember(name, .null)
                            case .increment(let amount): JSONMember("\(name).i", .object([JSONMember("$inc", .number(String(amount)))]))
                            case .arrayEdit(let add, let remove):
                                JSONMember(
                                    "\(name).a",
                                    .object([
                                        JSONMember("$add", .array(add.map(JSONValue.string))),
                                        JSONMember("$remove", .array(remove.map(JSONValue.string))),
                                    ]))
                            }
                        })))
        }
        return .object(members)
    }

    package static func == (lhs: ProfileEdit, rhs: ProfileEdit) -> Bool { lhs.json == rhs.json }
}

extension ProfileEdit {
    /// Reads a profile edit `json` wrote.
    package init(wire value: JSONValue, path: String) throws(WireError) {
        let object = try WireObject(value, path: path)
        self.init()
        for member in object.members {
            guard member.key == "custom_attributes" else {
                switch member.value {
                case .string, .null: natives.append(member)
                default: throw WireError(reason: "\(object.path(member.key)): expected a string or null")
                }
                continue
            }
            let custom = try WireObject(member.value, path: object.path(member.key))
            for attribute in custom.members {
                attributes.append(try AttributeEdit.read(key: attribute.key, attribute.value, path: custom.path(attribute.key)))
            }
        }
    }
}

extension AttributeEdit {
    /// Reads one member of `custom_attributes`: `name.t: value` sets, `name: null` removes, `name.i: {"$inc": n}` adds,
    /// `name.a: {"$add": […], "$remove": […]}` edits an array.
    static func read(key: String, _ value: JSONValue, path: String) throws(WireError) -> (name: String, edit: AttributeEdit) {
        guard let dot = key.firstIndex(of: ".") else {
            guard value == .null else { throw WireError(reason: "\(path): an attribute without a type suffix is removed by null") }
            return (key, .remove)
        }
        let name = String(key[..<dot])
        let suffix = key[key.index(after: dot)...]
        if case .object = value {
            let edit = try WireObject(value, path: path)
            let type = AttributeType(rawValue: String(suffix))
            if type == .integer, edit.value("$inc") != nil { return (name, .increment(try edit.int64("$inc"))) }
            if type == .array {
                return (name, .arrayEdit(add: try edit.optionalStrings("$add") ?? [], remove: try edit.optionalStrings("$remove") ?? []))
            }
            throw WireError(reason: "\(path): an object is {\"$inc\": n} or {\"$add\", \"$remove\"}")
        }
        return (name, .set(try AttributeValue(wire: value, suffix: suffix, path: path)))
    }
}
