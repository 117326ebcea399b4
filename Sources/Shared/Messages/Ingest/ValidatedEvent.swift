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
    package var attributes: [(String, AttributeValue)]

    /// `{"name": "PURCHASED", "id": …, "time": …, "label": …, "tags": […], "attributes": {"price.f": 9.5}}`.
    package var json: JSONValue {
        var members = [JSONMember("name", .string(name))]
        if let id { members.append(JSONMember("id", .string(id))) }
        if let time { members.append(JSONMember("time", .string(WireTime.format(time)))) }
        if let label { members.append(JSONMember("label", .string(label))) }
        if let tags { members.append(JSONMember("tags", .array(tags.map(JSONValue.string)))) }
        members.append(JSONMember("attributes", AttributeValue.typedObject(attributes)))
        return .object(members)
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

    package static func == (lhs: ValidatedEvent, rhs: ValidatedEvent) -> Bool { lhs.json == rhs.json }
}

extension ValidatedEvent {
    /// Reads an event `json` wrote.
    package init(wire value: JSONValue, path: String) throws(WireError) {
        let object = try WireObject(value, path: path)
        self.init(
            name: try object.string("name"), id: try object.optionalString("id"), time: try object.optionalDate("time"),
            label: try object.optionalString("label"), tags: try object.optionalStrings("tags"),
            attributes: try object.value("attributes").map { value throws(WireError) in
                try AttributeValue.typedMembers(value, path: object.path("attributes"))
            } ?? [])
    }
}
