import Foundation

extension String {
    /// Whether any scalar is a line break (LF, CR, VT, FF, NEL, LS, PS). Scalars, not grapheme clusters: fast.
    package var hasLineBreak: Bool {
        unicodeScalars.contains { scalar in
            switch scalar.value {
            case 0x0A...0x0D, 0x85, 0x2028, 0x2029: true
            default: false
            }
        }
    }

    /// Whether the string is only white space (true for the empty string).
    package var isBlank: Bool { unicodeScalars.allSatisfy(\.properties.isWhitespace) }

    /// ASCII letters lowercased, every other character kept (Unicode case mapping turns some non-ASCII letters into
    /// ASCII ones: `"K"`, the Kelvin sign, lowercases to `k`).
    package var asciiLowercased: String { String(String.UnicodeScalarView(unicodeScalars.map { scalar in
        (0x41...0x5A).contains(scalar.value) ? Unicode.Scalar(scalar.value + 32)! : scalar
    })) }

    /// ASCII letters uppercased, every other character kept.
    package var asciiUppercased: String { String(String.UnicodeScalarView(unicodeScalars.map { scalar in
        (0x61...0x7A).contains(scalar.value) ? Unicode.Scalar(scalar.value - 32)! : scalar
    })) }
}
