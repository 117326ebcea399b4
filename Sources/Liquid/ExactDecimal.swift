/// A number as Ruby Liquid's math sees a float: the decimal its shortest text writes (`0.1` is one tenth, not the
/// binary float nearest it), as significand × 10^exponent in integers. Plus, minus, times and round on these are exact
/// and cheap; past 18 digits they give nil and the caller computes with Foundation's `Decimal` instead.
struct ExactDecimal: Equatable {
    var significand: Int
    var exponent: Int

    init(significand: Int, exponent: Int) {
        self.significand = significand
        self.exponent = exponent
    }

    init(_ integer: Int) {
        self.init(significand: integer, exponent: 0)
    }

    /// From a float's shortest text (`12.5`, `1e-05`, `1.5e+20`).
    init?(_ value: Double) {
        guard value.isFinite else { return nil }
        self.init(text: "\(value)")
    }

    /// From decimal text: an optional sign, digits with an optional fraction, an optional exponent.
    init?(text: some StringProtocol) {
        var significand = 0
        var exponent = 0
        var negative = false
        var digits = 0
        var seenDot = false
        var seenDigit = false
        var utf8 = Substring(text).utf8[...]
        if let first = utf8.first, first == UInt8(ascii: "-") || first == UInt8(ascii: "+") {
            negative = first == UInt8(ascii: "-")
            utf8 = utf8.dropFirst()
        }
        while let byte = utf8.first {
            if byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") {
                seenDigit = true
                if significand != 0 || byte != UInt8(ascii: "0") { digits += 1 }
                guard digits <= 18 else { return nil }
                significand = significand * 10 + Int(byte - UInt8(ascii: "0"))
                if seenDot { exponent -= 1 }
            } else if byte == UInt8(ascii: "."), !seenDot {
                seenDot = true
            } else if byte == UInt8(ascii: "e") || byte == UInt8(ascii: "E") {
                guard seenDigit, let power = Int(Substring(utf8.dropFirst())) else { return nil }
                exponent += power
                utf8 = utf8[utf8.endIndex...]
                break
            } else {
                return nil
            }
            utf8 = utf8.dropFirst()
        }
        guard seenDigit else { return nil }
        self.init(significand: negative ? -significand : significand, exponent: exponent)
    }

    /// Both at the smaller exponent; nil when a significand would overflow.
    private static func aligned(_ a: ExactDecimal, _ b: ExactDecimal) -> (Int, Int, Int)? {
        let exponent = min(a.exponent, b.exponent)
        guard let x = a.scaled(to: exponent), let y = b.scaled(to: exponent) else { return nil }
        return (x, y, exponent)
    }

    /// The significand at a smaller exponent.
    private func scaled(to target: Int) -> Int? {
        var value = significand
        for _ in 0..<(exponent - target) {
            let (product, overflow) = value.multipliedReportingOverflow(by: 10)
            if overflow { return nil }
            value = product
        }
        return value
    }

    static func + (a: ExactDecimal, b: ExactDecimal) -> ExactDecimal? {
        guard let (x, y, exponent) = aligned(a, b) else { return nil }
        let (sum, overflow) = x.addingReportingOverflow(y)
        return overflow ? nil : ExactDecimal(significand: sum, exponent: exponent)
    }

    static func - (a: ExactDecimal, b: ExactDecimal) -> ExactDecimal? {
        guard let (x, y, exponent) = aligned(a, b) else { return nil }
        let (difference, overflow) = x.subtractingReportingOverflow(y)
        return overflow ? nil : ExactDecimal(significand: difference, exponent: exponent)
    }

    static func * (a: ExactDecimal, b: ExactDecimal) -> ExactDecimal? {
        let (product, overflow) = a.significand.multipliedReportingOverflow(by: b.significand)
        return overflow ? nil : ExactDecimal(significand: product, exponent: a.exponent + b.exponent)
    }

    /// Rounded to `places` decimals, half away from zero (BigDecimal's default).
    func rounded(places: Int) -> ExactDecimal {
        let drop = -places - exponent
        guard drop > 0 else { return self }
        guard drop <= 18 else { return ExactDecimal(significand: 0, exponent: -places) }
        var divisor = 1
        for _ in 0..<drop { divisor *= 10 }
        var quotient = significand / divisor
        let remainder = abs(significand % divisor)
        if remainder * 2 >= divisor { quotient += significand < 0 ? -1 : 1 }
        return ExactDecimal(significand: quotient, exponent: -places)
    }

    /// The nearest float (through its text, which the standard library reads correctly rounded).
    var double: Double { Double("\(significand)e\(exponent)") ?? 0 }

    /// The integer part, towards zero; nil past `Int`.
    var integer: Int? {
        if exponent >= 0 { return scaled(to: 0) }
        guard -exponent <= 18 else { return 0 }
        var divisor = 1
        for _ in 0..<(-exponent) { divisor *= 10 }
        return significand / divisor
    }
}
