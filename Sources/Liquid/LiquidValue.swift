import Foundation

/// A value as Ruby Liquid sees it: nil, booleans, integers and floats kept apart (`7 | divided_by: 2` is 3), strings,
/// arrays, hashes with their keys in order, and integer ranges (`(1..5)`).
public enum LiquidValue: Sendable, Equatable {
    case `nil`
    case bool(Bool)
    case int(Int)
    case double(Double)
    case string(String)
    case array([LiquidValue])
    case object(LiquidObject)
    case range(Int, Int)

    /// Only `nil` and `false` are falsy: `""`, `0` and `[]` are true, as in Ruby.
    public var isTruthy: Bool {
        switch self {
        case .nil, .bool(false): false
        default: true
        }
    }

    /// Ruby's `empty?`: an empty string, array or hash (the `empty` literal compares equal to these).
    var isEmpty: Bool {
        switch self {
        case .string(let text): text.isEmpty
        case .array(let items): items.isEmpty
        case .object(let object): object.isEmpty
        case .range(let low, let high): high < low
        default: false
        }
    }

    /// Liquid's `blank`: nil, false, an empty or all-whitespace string, an empty collection.
    var isBlank: Bool {
        switch self {
        case .nil, .bool(false): true
        case .string(let text): text.allSatisfy(\.isWhitespace)
        default: isEmpty
        }
    }

    /// The text an output writes: nil is empty, an array its items joined without separator (nested arrays flattened),
    /// a float as Ruby writes it (`3.0`, `1.0e+20`).
    public var text: String {
        switch self {
        case .nil: ""
        case .bool(let value): value ? "true" : "false"
        case .int(let value): String(value)
        case .double(let value): Self.rubyFloat(value)
        case .string(let value): value
        case .array(let items): items.map(\.text).joined()
        case .object(let object): object.inspect
        case .range(let low, let high): "\(low)..\(high)"
        }
    }

    /// Ruby's `inspect` form, used for a value inside a hash written out.
    var inspect: String {
        switch self {
        case .nil: "nil"
        case .string(let value): "\"" + value.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"") + "\""
        case .array(let items): "[" + items.map(\.inspect).joined(separator: ", ") + "]"
        default: text
        }
    }

    /// Ruby's `Float#to_s`: the shortest form that reads back, with `.0` on whole numbers and an exponent from 1e16
    /// up and below 1e-4.
    static func rubyFloat(_ value: Double) -> String {
        if value.isNaN { return "NaN" }
        if value.isInfinite { return value < 0 ? "-Infinity" : "Infinity" }
        let magnitude = abs(value)
        if magnitude != 0, magnitude >= 1e16 || magnitude < 1e-4 {
            // Swift writes `1e+20` / `1.5e-05`: Ruby's mantissa always has a fraction and its exponent two digits.
            let parts = "\(value)".split(separator: "e")
            var mantissa = String(parts[0])
            if !mantissa.contains(".") { mantissa += ".0" }
            var exponent = parts.count > 1 ? String(parts[1]) : "+0"
            let sign = exponent.first == "-" ? "-" : "+"
            exponent = String(exponent.drop { $0 == "+" || $0 == "-" })
            if exponent.count < 2 { exponent = "0" + exponent }
            return mantissa + "e" + sign + exponent
        }
        let text = "\(value)"
        return text.contains(".") || text.contains("e") ? text : text + ".0"
    }

    /// The items a `for` loop, `join` or `map` walks: an array's, a range's, a hash as one item, anything else as one.
    var items: [LiquidValue] {
        switch self {
        case .nil: []
        case .array(let items): items
        case .range(let low, let high): low <= high ? (low...high).map(LiquidValue.int) : []
        default: [self]
        }
    }

    /// An array's items with nested arrays flattened (Liquid's `InputIterator`).
    var flattened: [LiquidValue] {
        items.flatMap { item -> [LiquidValue] in
            if case .array = item { return item.flattened }
            return [item]
        }
    }

    /// `value[key]`: a hash's member, an array's item by index (negative from the end), and `size`, `first` and `last`
    /// of arrays, hashes and strings (`size` only).
    public subscript(key: LiquidValue) -> LiquidValue {
        switch (self, key) {
        case (.object(let object), .string(let name)):
            if let value = object[name] { return value }
            switch name {
            case "size": return .int(object.count)
            case "first": return object.first.map { .array([.string($0.key), $0.value]) } ?? .nil
            default: return .nil
            }
        case (.array, .int(let index)), (.range, .int(let index)):
            let items = self.items
            let position = index < 0 ? items.count + index : index
            return items.indices.contains(position) ? items[position] : .nil
        case (.array, .string(let name)), (.range, .string(let name)):
            let items = self.items
            switch name {
            case "size": return .int(items.count)
            case "first": return items.first ?? .nil
            case "last": return items.last ?? .nil
            default: return .nil
            }
        case (.string(let text), .string("size")): return .int(text.count)
        default: return .nil
        }
    }

    /// Whether `self[key]` names something, for strict variables: a member, an index inside, or a command.
    func has(_ key: LiquidValue) -> Bool {
        switch (self, key) {
        case (.object(let object), .string(let name)): object[name] != nil || name == "size" || name == "first"
        case (.array, .int), (.range, .int): self[key] != .nil
        case (.array, .string(let name)), (.range, .string(let name)): ["size", "first", "last"].contains(name)
        case (.string, .string("size")): true
        default: false
        }
    }
}

/// A hash whose keys keep the order they were set in (a `for` over a hash walks them in that order).
public struct LiquidObject: Sendable, Equatable {
    private var keys: [String] = []
    private var values: [String: LiquidValue] = [:]

    public init() {}

    public init(_ members: [(String, LiquidValue)]) {
        for (key, value) in members { self[key] = value }
    }

    public subscript(key: String) -> LiquidValue? {
        get { values[key] }
        set {
            if let newValue {
                if values.updateValue(newValue, forKey: key) == nil { keys.append(key) }
            } else if values.removeValue(forKey: key) != nil {
                keys.removeAll { $0 == key }
            }
        }
    }

    public var count: Int { keys.count }
    public var isEmpty: Bool { keys.isEmpty }
    public var members: [(key: String, value: LiquidValue)] { keys.map { ($0, values[$0]!) } }
    var first: (key: String, value: LiquidValue)? { keys.first.map { ($0, values[$0]!) } }

    /// Ruby's `Hash#inspect`: `{"a"=>1, "b"=>"x"}`.
    var inspect: String {
        "{" + members.map { "\"\($0.key)\"=>\($0.value.inspect)" }.joined(separator: ", ") + "}"
    }

    public static func == (lhs: LiquidObject, rhs: LiquidObject) -> Bool { lhs.values == rhs.values }
}

extension LiquidValue: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral, ExpressibleByBooleanLiteral,
    ExpressibleByFloatLiteral, ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral
{
    public init(stringLiteral value: String) { self = .string(value) }
    public init(integerLiteral value: Int) { self = .int(value) }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    public init(floatLiteral value: Double) { self = .double(value) }
    public init(arrayLiteral elements: LiquidValue...) { self = .array(elements) }
    public init(dictionaryLiteral elements: (String, LiquidValue)...) { self = .object(LiquidObject(elements)) }
}

extension LiquidObject: ExpressibleByDictionaryLiteral {
    public init(dictionaryLiteral elements: (String, LiquidValue)...) { self.init(elements) }
}
