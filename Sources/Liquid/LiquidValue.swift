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
            if !mantissa.utf8.contains(UInt8(ascii: ".")) { mantissa += ".0" }
            var exponent = parts.count > 1 ? String(parts[1]) : "+0"
            let sign = exponent.first == "-" ? "-" : "+"
            exponent = String(exponent.drop { $0 == "+" || $0 == "-" })
            if exponent.count < 2 { exponent = "0" + exponent }
            return mantissa + "e" + sign + exponent
        }
        let text = value.description
        return text.utf8.contains(where: { $0 == UInt8(ascii: ".") || $0 == UInt8(ascii: "e") }) ? text : text + ".0"
    }

    /// The items a `for` loop, `join` or `map` walks: an array's, a range's, a hash as one item, anything else as one.
    /// A range is built whole: its walkers charge `rangeCount` as work first, which bounds it (and a range of more
    /// than `Int.max` items, which no bound lets through, builds nothing).
    var items: [LiquidValue] {
        switch self {
        case .nil: []
        case .array(let items): items
        case .range(let low, let high): (rangeCount ?? 0) > 0 ? (low...high).map(LiquidValue.int) : []
        default: [self]
        }
    }

    /// How many integers a range holds (0 when it is backwards); nil when the count is past `Int` (`(Int.min..0)`), or
    /// for anything but a range.
    var rangeCount: Int? {
        guard case .range(let low, let high) = self else { return nil }
        guard high >= low else { return 0 }
        let (difference, overflow) = high.subtractingReportingOverflow(low)
        return overflow || difference == Int.max ? nil : difference + 1
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
        case (.array(let items), .int(let index)):
            let position = index < 0 ? items.count + index : index
            return items.indices.contains(position) ? items[position] : .nil
        case (.array(let items), .string(let name)):
            switch name {
            case "size": return .int(items.count)
            case "first": return items.first ?? .nil
            case "last": return items.last ?? .nil
            default: return .nil
            }
        // A range answers by arithmetic, never by building its items: `(1..n)[i]`, `.size`, `.first`, `.last`.
        case (.range(let low, let high), .int(let index)):
            guard high >= low else { return .nil }
            // From the start, or from the end (-1 is `high`); a sum past Int is outside the range.
            let (item, overflow) = index >= 0 ? low.addingReportingOverflow(index) : high.addingReportingOverflow(index + 1)
            return !overflow && item >= low && item <= high ? .int(item) : .nil
        case (.range(let low, let high), .string(let name)):
            switch name {
            case "size": return rangeCount.map(LiquidValue.int) ?? .double(Double(high) - Double(low) + 1)
            case "first": return high >= low ? .int(low) : .nil
            case "last": return high >= low ? .int(high) : .nil
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

/// A hash whose keys keep the order they were set in (a `for` over a hash walks them in that order). Small hashes
/// (a loop's `forloop`, an item with a few fields) are searched in place; larger ones keep an index by key.
public struct LiquidObject: Sendable, Equatable {
    private var entries: [(key: String, value: LiquidValue)] = []
    private var index: [String: Int]?
    private static let indexedFrom = 12

    public init() {}

    public init(_ members: [(String, LiquidValue)]) {
        entries.reserveCapacity(members.count)
        for (key, value) in members { self[key] = value }
    }

    private func position(_ key: String) -> Int? {
        if let index { return index[key] }
        return entries.firstIndex { $0.key == key }
    }

    public subscript(key: String) -> LiquidValue? {
        get { position(key).map { entries[$0].value } }
        set {
            if let at = position(key) {
                if let newValue {
                    entries[at].value = newValue
                } else {
                    entries.remove(at: at)
                    if index != nil { reindex() }
                }
            } else if let newValue {
                entries.append((key, newValue))
                if index != nil {
                    index?[key] = entries.count - 1
                } else if entries.count >= Self.indexedFrom {
                    reindex()
                }
            }
        }
    }

    private mutating func reindex() {
        var built: [String: Int] = [:]
        built.reserveCapacity(entries.count)
        for (offset, entry) in entries.enumerated() { built[entry.key] = offset }
        index = built
    }

    public var count: Int { entries.count }
    public var isEmpty: Bool { entries.isEmpty }
    public var members: [(key: String, value: LiquidValue)] { entries }
    var first: (key: String, value: LiquidValue)? { entries.first }

    /// Ruby's `Hash#inspect`: `{"a"=>1, "b"=>"x"}`.
    var inspect: String {
        "{" + members.map { "\"\($0.key)\"=>\($0.value.inspect)" }.joined(separator: ", ") + "}"
    }

    /// Equal when they hold the same keys with the same values, in any order (Ruby's `Hash#==`).
    public static func == (lhs: LiquidObject, rhs: LiquidObject) -> Bool {
        lhs.count == rhs.count && lhs.entries.allSatisfy { rhs[$0.key] == $0.value }
    }
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
