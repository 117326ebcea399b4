import Foundation

/// A value of a configuration file with where it was written: what the config-as-code reader works on. The `herald`
/// command builds nodes from YAML or JSON files (with lines); the services build them from `herald.config` records
/// (without lines, which were checked at `herald config apply`).
package struct ConfigNode: Sendable, Equatable {
    package indirect enum Value: Sendable, Equatable {
        case null
        case bool(Bool)
        case number(Double)
        case string(String)
        case array([ConfigNode])
        case object([(key: String, node: ConfigNode)])

        package static func == (left: Value, right: Value) -> Bool {
            switch (left, right) {
            case (.null, .null): true
            case (.bool(let a), .bool(let b)): a == b
            case (.number(let a), .number(let b)): a == b
            case (.string(let a), .string(let b)): a == b
            case (.array(let a), .array(let b)): a == b
            case (.object(let a), .object(let b)): a.map(\.key) == b.map(\.key) && a.map(\.node) == b.map(\.node)
            default: false
            }
        }
    }

    package var value: Value
    /// 1-based; 0 when unknown.
    package var line: Int

    package init(_ value: Value, line: Int = 0) {
        self.value = value
        self.line = line
    }

    package subscript(key: String) -> ConfigNode? {
        guard case .object(let members) = value else { return nil }
        return members.last { $0.key == key }?.node
    }

    /// A mapping's members (none for another value).
    package var members: [(key: String, node: ConfigNode)] {
        if case .object(let members) = value { members } else { [] }
    }

    /// A string as it is, a number as its JSON text (`3`, `0.5`); nil for anything else.
    package var scalarText: String? {
        switch json {
        case .string(let text), .number(let text): text
        default: nil
        }
    }

    package var typeName: String {
        switch value {
        case .null: "null"
        case .bool: "a boolean"
        case .number: "a number"
        case .string: "a string"
        case .array: "a list"
        case .object: "a mapping"
        }
    }

    /// The node as JSON (what `herald config apply` publishes).
    package var json: JSONValue {
        switch value {
        case .null: .null
        case .bool(let flag): .bool(flag)
        case .number(let number):
            .number(number == number.rounded() && abs(number) < 1e15 ? String(Int64(number)) : String(number))
        case .string(let text): .string(text)
        case .array(let items): .array(items.map(\.json))
        case .object(let members): .object(members.map { JSONMember($0.key, $0.node.json) })
        }
    }

    /// A node from JSON (a `herald.config` record), without lines.
    package init(json: JSONValue) {
        switch json {
        case .null: self.init(.null)
        case .bool(let flag): self.init(.bool(flag))
        case .number(let literal): self.init(.number(Double(literal) ?? .nan))
        case .string(let text): self.init(.string(text))
        case .array(let items): self.init(.array(items.map(ConfigNode.init(json:))))
        case .object(let members): self.init(.object(members.map { (key: $0.key, node: ConfigNode(json: $0.value)) }))
        }
    }
}

/// A problem in a configuration file: where and what.
package struct ConfigIssue: Error, Sendable, Equatable, CustomStringConvertible {
    package var file: String
    package var line: Int
    package var message: String

    package init(file: String, line: Int, message: String) {
        self.file = file
        self.line = line
        self.message = message
    }

    package var description: String { line > 0 ? "\(file):\(line): \(message)" : "\(file): \(message)" }
}
