import Foundation

/// A tracked event that passed validation.
package struct ValidatedEvent: Sendable, Equatable {
    /// Uppercased.
    package var name: String
    package var id: String?
    package var time: Date?
    package var label: String?
    /// Lowercased, deduplicated, in first-seen order.
    package var tags: [String]?
    package var attributes: [(String, AttributeValue)] { didSet { readAttributes = nil } }
    /// The attributes as the record held them, when it was read from one (the same JSON `typedObject` writes: kept so
    /// that the orchestrator stores and triggers on them without writing them again).
    private var readAttributes: JSONValue?

    /// The typed attributes as JSON: `{"price.f": 9.5, "tags.a": ["x"]}`.
    package var attributesJSON: JSONValue { readAttributes ?? AttributeValue.typedObject(attributes) }

    /// Writes `{"name": "PURCHASED", "id": …, "time": …, "label": …, "tags": […], "attributes": {"price.f": 9.5}}`.
    package func write(into writer: inout JSONWriter) {
        writer.openObject()
        writer.member("name", name)
        if let id { writer.member("id", id) }
        if let time { writer.member("time", WireTime.format(time)) }
        if let label { writer.member("label", label) }
        if let tags {
            writer.key("tags")
            writer.openArray()
            for tag in tags { writer.string(tag) }
            writer.closeArray()
        }
        writer.key("attributes")
        if let readAttributes {
            writer.value(readAttributes)
        } else {
            AttributeValue.writeTyped(attributes, into: &writer)
        }
        writer.closeObject()
    }

    /// The event as `write(into:)` writes it.
    package var serialized: [UInt8] {
        var writer = JSONWriter()
        write(into: &writer)
        return writer.bytes
    }

    package init(
        name: String, id: String? = nil, time: Date? = nil, label: String? = nil, tags: [String]? = nil,
        attributes: [(String, AttributeValue)]
    ) {
        self.name = name
        self.id = id
        self.time = time
        self.label = label
        self.tags = tags
        self.attributes = attributes
    }

    package static func == (lhs: ValidatedEvent, rhs: ValidatedEvent) -> Bool { lhs.serialized == rhs.serialized }
}

extension ValidatedEvent {
    /// Reads an event `json` wrote (one pass over its members; a name given twice reads as its last value).
    package init(wire value: JSONValue, path: String) throws(WireError) {
        guard case .object(let members) = value else { throw WireError(reason: "\(path): expected an object") }
        var name: String?
        var id: String?
        var time: Date?
        var label: String?
        var tags: [String]?
        var attributes: JSONValue?
        func string(_ member: JSONMember) throws(WireError) -> String? {
            switch member.value {
            case .string(let text): return text
            case .null: return nil
            default: throw WireError(reason: "\(path).\(member.key): expected a string")
            }
        }
        for member in members {
            switch member.key {
            case "name": name = try string(member)
            case "id": id = try string(member)
            case "label": label = try string(member)
            case "time":
                time = try string(member).map { text throws(WireError) in
                    guard let date = WireTime.parse(text) else { throw WireError(reason: "\(path).time: expected an ISO-8601 time") }
                    return date
                }
            case "tags":
                switch member.value {
                case .null: tags = nil
                case .array(let items):
                    tags = try items.enumerated().map { index, item throws(WireError) in
                        guard case .string(let tag) = item else { throw WireError(reason: "\(path).tags[\(index)]: expected a string") }
                        return tag
                    }
                default: throw WireError(reason: "\(path).tags: expected an array")
                }
            case "attributes": attributes = member.value
            default: continue
            }
        }
        guard let name else { throw WireError(reason: "\(path).name: missing") }
        self.init(
            name: name, id: id, time: time, label: label, tags: tags,
            attributes: try attributes.map { value throws(WireError) in
                try AttributeValue.typedMembers(value, path: "\(path).attributes")
            } ?? [])
        readAttributes = attributes
    }
}
