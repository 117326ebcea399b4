import Foundation

/// The members of a JSON object of a record on the wire, read by name: a missing or mistyped member is a `WireError`
/// naming its path (`profile.custom_attributes.age.i: expected an integer`). A name given twice reads as its last value.
package struct WireObject {
    package let members: [JSONMember]
    /// Where the object is in the record (`""` at the root).
    package let path: String

    package init(members: [JSONMember], path: String) {
        self.members = members
        self.path = path
    }

    package init(_ value: JSONValue, path: String) throws(WireError) {
        guard case .object(let members) = value else { throw WireError(reason: "\(path): expected an object") }
        self.init(members: members, path: path)
    }

    /// The path of a member.
    package func path(_ name: String) -> String { path.isEmpty ? name : "\(path).\(name)" }

    /// A member's value; nil when absent.
    package func value(_ name: String) -> JSONValue? { members.last { $0.key == name }?.value }

    private func mismatch(_ name: String, _ expected: String) -> WireError {
        WireError(reason: "\(path(name)): expected \(expected)")
    }

    package func string(_ name: String) throws(WireError) -> String {
        guard let text = try optionalString(name) else { throw WireError(reason: "\(path(name)): missing") }
        return text
    }

    /// Absent or null: nil.
    package func optionalString(_ name: String) throws(WireError) -> String? {
        switch value(name) {
        case nil, .null?: return nil
        case .string(let text)?: return text
        default: throw mismatch(name, "a string")
        }
    }

    /// A time (`WireTime`); absent or null: nil.
    package func optionalTime(_ name: String) throws(WireError) -> Date? {
        guard let text = try optionalString(name) else { return nil }
        guard let date = WireTime.parse(text) else { throw mismatch(name, "a time") }
        return date
    }

    package func time(_ name: String) throws(WireError) -> Date {
        guard let date = try optionalTime(name) else { throw WireError(reason: "\(path(name)): missing") }
        return date
    }

    /// One of a kind's values, by its raw value (absent or null: nil); another value is an error listing the kind's.
    package func optionalKind<Kind: RawRepresentable & CaseIterable>(_ name: String, as kind: Kind.Type) throws(WireError) -> Kind?
    where Kind.RawValue == String {
        guard let text = try optionalString(name) else { return nil }
        guard let value = Kind(rawValue: text) else {
            throw mismatch(name, Kind.allCases.map { "\"\($0.rawValue)\"" }.joined(separator: " or "))
        }
        return value
    }

    package func kind<Kind: RawRepresentable & CaseIterable>(_ name: String, as kind: Kind.Type) throws(WireError) -> Kind
    where Kind.RawValue == String {
        guard let value = try optionalKind(name, as: kind) else { throw WireError(reason: "\(path(name)): missing") }
        return value
    }

    package func bool(_ name: String) throws(WireError) -> Bool {
        guard case .bool(let flag)? = value(name) else { throw mismatch(name, "a boolean") }
        return flag
    }

    /// Absent or null: nil.
    package func optionalBool(_ name: String) throws(WireError) -> Bool? {
        switch value(name) {
        case nil, .null?: return nil
        case .bool(let flag)?: return flag
        default: throw mismatch(name, "a boolean")
        }
    }

    package func optionalDouble(_ name: String) throws(WireError) -> Double? {
        switch value(name) {
        case nil, .null?: return nil
        case .number(let literal)?:
            guard let number = Double(literal) else { throw mismatch(name, "a number") }
            return number
        default: throw mismatch(name, "a number")
        }
    }

    /// A whole number (absent or null: nil).
    package func optionalInt(_ name: String) throws(WireError) -> Int? {
        switch value(name) {
        case nil, .null?: return nil
        case .number(let literal)?:
            guard let number = Int(literal) else { throw mismatch(name, "a whole number") }
            return number
        default: throw mismatch(name, "a whole number")
        }
    }

    package func double(_ name: String) throws(WireError) -> Double {
        guard let number = try optionalDouble(name) else { throw WireError(reason: "\(path(name)): missing") }
        return number
    }

    package func int64(_ name: String) throws(WireError) -> Int64 {
        guard case .number(let literal)? = value(name), let number = Int64(literal) else { throw mismatch(name, "an integer") }
        return number
    }

    /// A time in `WireTime`'s format; absent or null: nil.
    package func optionalDate(_ name: String) throws(WireError) -> Date? {
        guard let text = try optionalString(name) else { return nil }
        guard let date = WireTime.parse(text) else { throw mismatch(name, "an ISO-8601 time") }
        return date
    }

    package func object(_ name: String) throws(WireError) -> WireObject {
        guard let value = value(name) else { throw WireError(reason: "\(path(name)): missing") }
        return try WireObject(value, path: path(name))
    }

    /// Absent or null: nil.
    package func optionalObject(_ name: String) throws(WireError) -> WireObject? {
        switch value(name) {
        case nil, .null?: return nil
        case let value?: return try WireObject(value, path: path(name))
        }
    }

    /// Absent: nil.
    package func optionalArray(_ name: String) throws(WireError) -> [JSONValue]? {
        switch value(name) {
        case nil: return nil
        case .array(let items)?: return items
        default: throw mismatch(name, "an array")
        }
    }

    package func array(_ name: String) throws(WireError) -> [JSONValue] {
        guard let items = try optionalArray(name) else { throw WireError(reason: "\(path(name)): missing") }
        return items
    }

    /// An array of strings (absent: nil).
    package func optionalStrings(_ name: String) throws(WireError) -> [String]? {
        guard let items = try optionalArray(name) else { return nil }
        var strings: [String] = []
        strings.reserveCapacity(items.count)
        for (index, item) in items.enumerated() {
            guard case .string(let text) = item else { throw WireError(reason: "\(path(name))[\(index)]: expected a string") }
            strings.append(text)
        }
        return strings
    }
}
