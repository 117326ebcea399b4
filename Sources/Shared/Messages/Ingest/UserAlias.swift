import Foundation

/// A Braze user alias: a name under a label (`{"alias_label": "crm", "alias_name": "42"}`); a label/name pair belongs
/// to one profile at most, and a profile has one name per label.
package struct UserAlias: Sendable, Equatable, Hashable {
    package var label: String
    package var name: String

    package init(label: String, name: String) {
        self.label = label
        self.name = name
    }

    var json: JSONValue { .object([JSONMember("label", .string(label)), JSONMember("name", .string(name))]) }

    init(wire value: JSONValue, path: String) throws(WireError) {
        let object = try WireObject(value, path: path)
        self.init(label: try object.string("label"), name: try object.string("name"))
    }
}
