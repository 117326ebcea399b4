import Foundation

/// Comparison as Ruby Liquid's conditions do it: `==` with Ruby's equality (`1 == 1.0`, `"1" != 1`), `empty` and
/// `blank`; ordering only between numbers or between strings; `contains` on strings, arrays and hashes.
enum LiquidCompare {
    static func equal(_ left: LiquidValue, subject: LiquidExpression, _ rightExpression: LiquidExpression, _ right: LiquidValue) -> Bool {
        switch (subject, rightExpression) {
        case (_, .empty): return left.isEmpty
        case (.empty, _): return right.isEmpty
        case (_, .blank): return left.isBlank
        case (.blank, _): return right.isBlank
        default: return same(left, right)
        }
    }

    /// Ruby's `==`.
    static func same(_ left: LiquidValue, _ right: LiquidValue) -> Bool {
        switch (left, right) {
        case (.int(let a), .double(let b)), (.double(let b), .int(let a)): return Double(a) == b
        case (.array(let a), .array(let b)): return a.count == b.count && zip(a, b).allSatisfy { same($0, $1) }
        case (.range, .array), (.array, .range): return false
        default: return left == right
        }
    }

    /// nil when Ruby Liquid's condition is false for want of an order (nil, booleans, arrays, hashes).
    static func order(_ left: LiquidValue, _ right: LiquidValue, at position: SourcePosition) throws(LiquidError) -> ComparisonResult? {
        switch (left, right) {
        case (.int(let a), .int(let b)): return a < b ? .orderedAscending : a > b ? .orderedDescending : .orderedSame
        case (.int, .double), (.double, .int), (.double, .double):
            let a = LiquidNumbers.double(left), b = LiquidNumbers.double(right)
            return a < b ? .orderedAscending : a > b ? .orderedDescending : .orderedSame
        case (.string(let a), .string(let b)):
            return a.utf8.lexicographicallyPrecedes(b.utf8) ? .orderedAscending : a == b ? .orderedSame : .orderedDescending
        case (.int, .string), (.double, .string):
            throw LiquidError(.render, "comparison of \(left.rubyClass) with String failed", at: position)
        case (.string, .int), (.string, .double):
            throw LiquidError(.render, "comparison of String with \(right.text) failed", at: position)
        default: return nil
        }
    }

    static func isSpecial(_ expression: LiquidExpression) -> Bool {
        switch expression {
        case .empty, .blank: true
        default: false
        }
    }

    /// Ruby's `left && right && left.include?(right)`: a nil or false right side is never contained.
    static func contains(_ left: LiquidValue, _ right: LiquidValue) -> Bool {
        if !right.isTruthy { return false }
        switch left {
        case .string(let text): return text.contains(right.text) || right.text.isEmpty
        case .array(let items): return items.contains { same($0, right) }
        case .range(let low, let high):
            guard let value = LiquidNumbers.integer(right), case .int = right else { return false }
            return low <= value && value <= high
        case .object(let object):
            if case .string(let key) = right { return object[key] != nil }
            return false
        default: return false
        }
    }
}

extension LiquidValue {
    /// The Ruby class name, for error messages as Ruby Liquid words them.
    var rubyClass: String {
        switch self {
        case .nil: "NilClass"
        case .bool(let value): value ? "TrueClass" : "FalseClass"
        case .int: "Integer"
        case .double: "Float"
        case .string: "String"
        case .array: "Array"
        case .object: "Hash"
        case .range: "Range"
        }
    }
}
