import Foundation
import Shared

/// Reads an object's members, reporting the ones it does not know.
struct Fields {
    private(set) var values: [String: JSONValue] = [:]
    private(set) var problems: [Problem] = []
    /// Whether the value was an object at all.
    let isObject: Bool

    init(_ value: JSONValue, path: String, known: Set<String>) {
        guard case .object(let members) = value else {
            isObject = false
            problems.append(Violation("invalid_type", "expected an object, got \(value.typeName)").at(path))
            return
        }
        isObject = true
        // One message for the object's unknown members (it names the known ones): built once, shared by each problem.
        var unknown: String?
        for member in members {
            if known.contains(member.key) {
                values[member.key] = member.value
            } else {
                let message = unknown ?? "unknown field (known: \(known.sorted().joined(separator: ", ")))"
                unknown = message
                problems.append(Violation("unknown_field", message).at(path.isEmpty ? member.key : "\(path).\(member.key)"))
            }
        }
    }

    subscript(key: String) -> JSONValue? { values[key] }

    /// An optional string field through `rule`: nil when absent (or null, if `nullable`), `invalid_type` when not a
    /// string.
    func string<Value>(_ key: String, nullable: Bool = false, _ rule: (String) throws(Violation) -> Value) throws(Violation)
        -> Value?
    {
        switch values[key] {
        case nil: return nil
        case .null? where nullable: return nil
        case .string(let text)?: return try rule(text)
        case let other?:
            throw Violation("invalid_type", "\(key) is a string\(nullable ? " or null" : ""), got \(other.typeName)")
        }
    }

    mutating func report(_ problem: Problem) { problems.append(problem) }
}
