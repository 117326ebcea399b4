import Foundation

/// Builds a `ProfileEdit` in linear time: a later write to a name replaces the earlier one and takes its place at the
/// end (the request's order of last writes). A request of 140,000 names once held a core for 36 s when each write
/// searched the list for its name (issue 20, item 5).
package struct ProfileEditBuilder {
    private var natives: [JSONMember?] = []
    private var nativeSlots: [String: Int] = [:]
    private var attributes: [(name: String, edit: AttributeEdit)?] = []
    private var attributeSlots: [String: Int] = [:]

    package init() {}

    package mutating func setNative(_ name: String, _ value: JSONValue) {
        if let slot = nativeSlots[name] { natives[slot] = nil }
        nativeSlots[name] = natives.count
        natives.append(JSONMember(name, value))
    }

    package mutating func setAttribute(_ name: String, _ edit: AttributeEdit) {
        if let slot = attributeSlots[name] { attributes[slot] = nil }
        attributeSlots[name] = attributes.count
        attributes.append((name, edit))
    }

    package var edit: ProfileEdit {
        var edit = ProfileEdit()
        edit.natives = natives.compactMap { $0 }
        edit.attributes = attributes.compactMap { $0 }
        return edit
    }
}
