import Foundation

/// A validated attribute value, with the type suffix used on the wire (`age.i`, as the SDK writes them).
package enum AttributeValue: Sendable, Equatable {
    case string(String)
    case integer(Int64)
    case double(Double)
    case bool(Bool)
    case date(Date)
    case url(String)
    case stringArray([String])
    /// Events only.
    case object([(String, AttributeValue)])
    /// Events only.
    case objectArray([[(String, AttributeValue)]])

    package var type: AttributeType {
        switch self {
        case .string: .string
        case .integer: .integer
        case .double: .double
        case .bool: .bool
        case .date: .time
        case .url: .url
        case .stringArray, .objectArray: .array
        case .object: .object
        }
    }

    /// The type's suffix on the wire (`age.i`).
    package var suffix: String { type.rawValue }

    package var json: JSONValue {
        switch self {
        case .string(let value), .url(let value): .string(value)
        case .integer(let value): .number(String(value))
        case .double(let value): .number(JSONValue.literal(value))
        case .bool(let value): .bool(value)
        case .date(let value): .string(WireTime.format(value))
        case .stringArray(let values): .array(values.map(JSONValue.string))
        case .object(let members): AttributeValue.typedObject(members)
        case .objectArray(let objects): .array(objects.map(AttributeValue.typedObject))
        }
    }

    /// `{"name.s": …, "price.f": …}`.
    package static func typedObject(_ members: [(String, AttributeValue)]) -> JSONValue {
        .object(members.map { JSONMember("\($0.0).\($0.1.suffix)", $0.1.json) })
    }

    package static func == (lhs: AttributeValue, rhs: AttributeValue) -> Bool { lhs.json == rhs.json }

    /// Writes what `json` builds, without building it (an ingest record's event attributes).
    package func write(into writer: inout JSONWriter) {
        switch self {
        case .string(let value), .url(let value): writer.string(value)
        case .integer(let value): writer.number(String(value))
        case .double(let value): writer.number(JSONValue.literal(value))
        case .bool(let value): writer.bool(value)
        case .date(let value): writer.string(WireTime.format(value))
        case .stringArray(let values):
            writer.openArray()
            for value in values { writer.string(value) }
            writer.closeArray()
        case .object(let members): AttributeValue.writeTyped(members, into: &writer)
        case .objectArray(let objects):
            writer.openArray()
            for object in objects { AttributeValue.writeTyped(object, into: &writer) }
            writer.closeArray()
        }
    }

    /// Writes what `typedObject` builds.
    package static func writeTyped(_ members: [(String, AttributeValue)], into writer: inout JSONWriter) {
        writer.openObject()
        for (name, value) in members {
            writer.key("\(name).\(value.suffix)")
            value.write(into: &writer)
        }
        writer.closeObject()
    }
}

extension AttributeValue {
    /// Reads a value `json` wrote under the type suffix `suffix` (`s`, `i`, `f`, `b`, `t`, `u`, `a`, `o`).
    package init(wire value: JSONValue, suffix: Substring, path: String) throws(WireError) {
        switch (AttributeType(rawValue: String(suffix)), value) {
        case (.string?, .string(let text)): self = .string(text)
        case (.url?, .string(let text)): self = .url(text)
        case (.bool?, .bool(let flag)): self = .bool(flag)
        case (.integer?, .number(let literal)):
            guard let number = Int64(literal) else { throw WireError(reason: "\(path): expected an integer") }
            self = .integer(number)
        case (.double?, .number(let literal)):
            guard let number = Double(literal) else { throw WireError(reason: "\(path): expected a number") }
            self = .double(number)
        case (.time?, .string(let text)):
            guard let date = WireTime.parse(text) else { throw WireError(reason: "\(path): expected an ISO-8601 time") }
            self = .date(date)
        case (.array?, .array(let items)):
            var strings: [String] = []
            var objects: [[(String, AttributeValue)]] = []
            for (index, item) in items.enumerated() {
                switch item {
                case .string(let text) where objects.isEmpty: strings.append(text)
                case .object where strings.isEmpty: objects.append(try Self.typedMembers(item, path: "\(path)[\(index)]"))
                default: throw WireError(reason: "\(path)[\(index)]: an array holds only strings or only objects")
                }
            }
            self = objects.isEmpty ? .stringArray(strings) : .objectArray(objects)
        case (.object?, .object): self = .object(try Self.typedMembers(value, path: path))
        default: throw WireError(reason: "\(path): not a value of type \(suffix)")
        }
    }

    /// The attributes of an object `typedObject` wrote: `{"price.f": 9.5}` → `[("price", .double(9.5))]`.
    package static func typedMembers(_ value: JSONValue, path: String) throws(WireError) -> [(String, AttributeValue)] {
        guard case .object(let members) = value else { throw WireError(reason: "\(path): expected an object") }
        var result: [(String, AttributeValue)] = []
        result.reserveCapacity(members.count)
        for member in members {
            guard let dot = member.key.lastIndex(of: ".") else {
                throw WireError(reason: "\(path).\(member.key): an attribute without a type suffix")
            }
            let suffix = member.key[member.key.index(after: dot)...]
            result.append(
                (String(member.key[..<dot]), try AttributeValue(wire: member.value, suffix: suffix, path: "\(path).\(member.key)")))
        }
        return result
    }
}
