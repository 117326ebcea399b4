import Foundation

/// Numbers as Ruby Liquid's math filters treat them: integers stay integers (`7 | divided_by: 2` is 3, floored),
/// anything with a float is computed in decimal (`0.1 | plus: 0.2` is 0.3) and written back as a float.
///
/// Ruby's integers have no bound and Swift's trap past 64 bits, so where Ruby's answer is an integer past `Int`
/// (`-9223372036854775808 | divided_by: -1`, `9223372036854775807 | plus: 1`, `1e300 | ceil`), Herald gives the float
/// nearest it (`9.223372036854776e+18`). Floats Foundation's `Decimal` cannot hold (infinities, NaN, magnitudes past
/// about 1e165 or below 1e-128) are computed as floats, as Ruby's `BigDecimal#to_f` would write them; where Ruby raises
/// (`Infinity | ceil`: FloatDomainError), the render fails (docs/templates.md, "Numbers past 64 bits").
enum LiquidNumbers {
    enum Number {
        case int(Int)
        case decimal(Decimal)
        /// A float `Decimal` cannot hold: computed as a float.
        case float(Double)
    }

    /// `Utils.to_number`: numbers as they are, a string of digits with a fraction as a decimal, any other string by
    /// its leading integer (`"12abc"` is 12, `"abc"` 0), anything else 0.
    static func number(_ value: LiquidValue) -> Number {
        switch value {
        case .int(let value): return .int(value)
        case .double(let value): return decimal(value).map(Number.decimal) ?? .float(value)
        case .string(let text):
            let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
            if isDecimalText(trimmed) {
                if let value = Decimal(string: trimmed, locale: Locale(identifier: "en_US_POSIX")) { return .decimal(value) }
                if let value = Double(trimmed) { return .float(value) }
            }
            return .int(leadingInteger(text))
        default: return .int(0)
        }
    }

    /// `-?\d+\.\d+`.
    private static func isDecimalText(_ text: String) -> Bool {
        var rest = Substring(text)
        if rest.first == "-" { rest = rest.dropFirst() }
        guard let dot = rest.firstIndex(of: ".") else { return false }
        let whole = rest[..<dot], fraction = rest[rest.index(after: dot)...]
        return !whole.isEmpty && !fraction.isEmpty && whole.allSatisfy(\.isASCIIDigit) && fraction.allSatisfy(\.isASCIIDigit)
    }

    /// Ruby's `String#to_i`: leading whitespace, a sign, digits; 0 when there are none.
    static func leadingInteger(_ text: String) -> Int {
        var rest = Substring(text).drop { $0.isWhitespace }
        var negative = false
        if rest.first == "-" || rest.first == "+" {
            negative = rest.first == "-"
            rest = rest.dropFirst()
        }
        let digits = rest.prefix { $0.isASCIIDigit }
        guard let value = Int(digits) else { return digits.isEmpty ? 0 : (negative ? Int.min : Int.max) }
        return negative ? -value : value
    }

    /// A finite float as the decimal its shortest text writes; nil past `Decimal`'s range (whose own initializer from
    /// a float traps on 1e308).
    static func decimal(_ value: Double) -> Decimal? {
        guard value.isFinite else { return nil }
        return Decimal(string: "\(value)", locale: Locale(identifier: "en_US_POSIX"))
    }

    /// A decimal back to a float through its text (Foundation's own conversion can be off in the last digit).
    static func double(_ value: Decimal) -> Double {
        Double(NSDecimalNumber(decimal: value).stringValue) ?? NSDecimalNumber(decimal: value).doubleValue
    }

    static func double(_ value: LiquidValue) -> Double {
        double(number(value))
    }

    static func double(_ number: Number) -> Double {
        switch number {
        case .int(let value): Double(value)
        case .decimal(let value): double(value)
        case .float(let value): value
        }
    }

    static func value(_ number: Number) -> LiquidValue {
        switch number {
        case .int(let value): .int(value)
        case .decimal(let value): .double(double(value))
        case .float(let value): .double(value)
        }
    }

    /// A whole number as Ruby's `to_i` gives it: an integer when it fits in `Int`, else the nearest float (Ruby's would
    /// be a bignum); NaN and the infinities have no integer (Ruby's FloatDomainError), which fails the render.
    static func integral(_ value: Decimal, _ filter: String) throws(LiquidError) -> LiquidValue {
        guard !value.isNaN else { throw LiquidError(.render, "\(filter): NaN has no integer value") }
        if let integer = Int(NSDecimalNumber(decimal: value).stringValue) { return .int(integer) }
        return .double(double(value))
    }

    static func integral(_ value: Double, _ filter: String) throws(LiquidError) -> LiquidValue {
        guard value.isFinite else { throw LiquidError(.render, "\(filter): \(LiquidValue.rubyFloat(value)) has no integer value") }
        if let integer = Int(exactly: value) { return .int(integer) }
        return .double(value)
    }

    /// A number of decimal places (`round`'s argument), Ruby's `to_number` of it, kept within what a `Decimal` has.
    static func places(_ value: LiquidValue) -> Int {
        let places: Double = switch number(value) {
        case .int(let value): Double(value)
        case .decimal(let value): double(round(value, 0, .down))
        case .float(let value): value.isNaN ? 0 : value.rounded(.towardZero)
        }
        return Int(min(max(places, -200), 200))
    }

    /// `Utils.to_integer`: an integer, or a string that is one (`Integer("2")`); nil for anything else, floats
    /// included, which Ruby Liquid refuses as "invalid integer".
    static func integer(_ value: LiquidValue) -> Int? {
        switch value {
        case .int(let value): return value
        case .string(let text): return Int(text.trimmingCharacters(in: .whitespaces))
        default: return nil
        }
    }

    /// An integer operand (or a string Ruby reads as one) as an exact decimal.
    private static func integerOperand(_ value: LiquidValue) -> ExactDecimal? {
        if case .int(let number) = number(value) { return ExactDecimal(number) }
        return nil
    }

    enum Operation {
        case plus, minus, times, dividedBy, modulo
    }

    /// A float or a decimal string as an exact decimal, for the fast path (nil for integers and anything else).
    static func exact(_ value: LiquidValue) -> ExactDecimal? {
        switch value {
        case .double(let number): return ExactDecimal(number)
        case .string(let text):
            let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
            return isDecimalText(trimmed) ? ExactDecimal(text: trimmed) : nil
        default: return nil
        }
    }

    /// `input op operand` with Ruby's rules; an integer result that would overflow is computed in decimal.
    static func apply(_ operation: Operation, _ input: LiquidValue, _ operand: LiquidValue) throws(LiquidError) -> LiquidValue {
        // A float on either side: exact decimal arithmetic in integers when it fits (plus, minus, times).
        if operation == .plus || operation == .minus || operation == .times {
            let a = exact(input), b = exact(operand)
            if a != nil || b != nil {
                let x = a ?? integerOperand(input), y = b ?? integerOperand(operand)
                if let x, let y {
                    let result: ExactDecimal? = switch operation {
                    case .plus: x + y
                    case .minus: x - y
                    default: x * y
                    }
                    if let result { return .double(result.double) }
                }
            }
        }
        switch (number(input), number(operand)) {
        case (.int(let a), .int(let b)):
            switch operation {
            case .plus:
                let (sum, overflow) = a.addingReportingOverflow(b)
                if !overflow { return .int(sum) }
            case .minus:
                let (difference, overflow) = a.subtractingReportingOverflow(b)
                if !overflow { return .int(difference) }
            case .times:
                let (product, overflow) = a.multipliedReportingOverflow(by: b)
                if !overflow { return .int(product) }
            case .dividedBy:
                guard b != 0 else { throw LiquidError(.render, "divided by 0") }
                // Int.min / -1 is the one quotient past Int: computed in decimal below.
                guard a != Int.min || b != -1 else { break }
                // Ruby's integer division floors: -7 / 2 is -4.
                let quotient = a / b
                return .int((a % b != 0 && (a < 0) != (b < 0)) ? quotient - 1 : quotient)
            case .modulo:
                guard b != 0 else { throw LiquidError(.render, "divided by 0") }
                // Swift traps on Int.min % -1; every integer is a multiple of -1.
                guard b != -1 else { return .int(0) }
                let remainder = a % b
                return .int(remainder != 0 && (remainder < 0) != (b < 0) ? remainder + b : remainder)
            }
            return try apply(operation, .decimal(Decimal(a)), .decimal(Decimal(b)))
        case (let a, let b): return try apply(operation, a, b)
        }
    }

    /// Two numbers, one of them not an integer: in decimal, or as floats when either is past `Decimal` or the decimal
    /// result is (a `Decimal` that overflows is NaN).
    private static func apply(_ operation: Operation, _ a: Number, _ b: Number) throws(LiquidError) -> LiquidValue {
        if let x = decimal(a), let y = decimal(b) {
            let result: Decimal
            switch operation {
            case .plus: result = x + y
            case .minus: result = x - y
            case .times: result = x * y
            case .dividedBy:
                guard !y.isZero else { throw LiquidError(.render, "divided by 0") }
                result = x / y
            case .modulo:
                guard !y.isZero else { throw LiquidError(.render, "divided by 0") }
                result = x - y * floor(x / y)
            }
            if !result.isNaN { return .double(double(result)) }
        }
        let x = double(a), y = double(b)
        switch operation {
        case .plus: return .double(x + y)
        case .minus: return .double(x - y)
        case .times: return .double(x * y)
        case .dividedBy:
            guard y != 0 else { throw LiquidError(.render, "divided by 0") }
            return .double(x / y)
        case .modulo:
            guard y != 0 else { throw LiquidError(.render, "divided by 0") }
            return .double(x - y * (x / y).rounded(.down))
        }
    }

    private static func decimal(_ number: Number) -> Decimal? {
        switch number {
        case .int(let value): Decimal(value)
        case .decimal(let value): value
        case .float: nil
        }
    }

    /// Rounds towards negative infinity.
    static func floor(_ value: Decimal) -> Decimal {
        var input = value, result = Decimal()
        NSDecimalRound(&result, &input, 0, .down)
        return result
    }

    /// Rounds half away from zero to `places`, as BigDecimal does.
    static func round(_ value: Decimal, _ places: Int, _ mode: NSDecimalNumber.RoundingMode = .plain) -> Decimal {
        var input = value, result = Decimal()
        NSDecimalRound(&result, &input, places, mode)
        return result
    }
}

extension Character {
    var isASCIIDigit: Bool { ("0"..."9").contains(self) }
}

extension Int {
    /// `self + other`, held at `Int.min` or `Int.max` instead of trapping: for offsets and bounds from data, where a
    /// sum past the range means "past every item".
    func clampedAdding(_ other: Int) -> Int {
        let (sum, overflow) = addingReportingOverflow(other)
        return overflow ? (other > 0 ? Int.max : Int.min) : sum
    }
}
