import Foundation

/// Numbers as Ruby Liquid's math filters treat them: integers stay integers (`7 | divided_by: 2` is 3, floored),
/// anything with a float is computed in decimal (`0.1 | plus: 0.2` is 0.3) and written back as a float.
enum LiquidNumbers {
    enum Number {
        case int(Int)
        case decimal(Decimal)
    }

    /// `Utils.to_number`: numbers as they are, a string of digits with a fraction as a decimal, any other string by
    /// its leading integer (`"12abc"` is 12, `"abc"` 0), anything else 0.
    static func number(_ value: LiquidValue) -> Number {
        switch value {
        case .int(let value): return .int(value)
        case .double(let value): return .decimal(decimal(value))
        case .string(let text):
            let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
            if isDecimalText(trimmed), let value = Decimal(string: trimmed, locale: Locale(identifier: "en_US_POSIX")) { return .decimal(value) }
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

    static func decimal(_ value: Double) -> Decimal {
        Decimal(string: "\(value)", locale: Locale(identifier: "en_US_POSIX")) ?? Decimal(value)
    }

    /// A decimal back to a float through its text (Foundation's own conversion can be off in the last digit).
    static func double(_ value: Decimal) -> Double {
        Double(NSDecimalNumber(decimal: value).stringValue) ?? NSDecimalNumber(decimal: value).doubleValue
    }

    static func double(_ value: LiquidValue) -> Double {
        switch number(value) {
        case .int(let value): Double(value)
        case .decimal(let value): double(value)
        }
    }

    static func value(_ number: Number) -> LiquidValue {
        switch number {
        case .int(let value): .int(value)
        case .decimal(let value): .double(double(value))
        }
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
                // Ruby's integer division floors: -7 / 2 is -4.
                let quotient = a / b
                return .int((a % b != 0 && (a < 0) != (b < 0)) ? quotient - 1 : quotient)
            case .modulo:
                guard b != 0 else { throw LiquidError(.render, "divided by 0") }
                let remainder = a % b
                return .int(remainder != 0 && (remainder < 0) != (b < 0) ? remainder + b : remainder)
            }
            return try apply(operation, Decimal(a), Decimal(b))
        case (let a, let b): return try apply(operation, decimal(a), decimal(b))
        }
    }

    private static func decimal(_ number: Number) -> Decimal {
        switch number {
        case .int(let value): Decimal(value)
        case .decimal(let value): value
        }
    }

    private static func apply(_ operation: Operation, _ a: Decimal, _ b: Decimal) throws(LiquidError) -> LiquidValue {
        switch operation {
        case .plus: return .double(double(a + b))
        case .minus: return .double(double(a - b))
        case .times: return .double(double(a * b))
        case .dividedBy:
            guard !b.isZero else { throw LiquidError(.render, "divided by 0") }
            return .double(double(a / b))
        case .modulo:
            guard !b.isZero else { throw LiquidError(.render, "divided by 0") }
            return .double(double(a - b * floor(a / b)))
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
