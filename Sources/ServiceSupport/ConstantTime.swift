/// Byte comparison whose time does not depend on where the inputs differ (signatures, proofs, tokens); only the
/// lengths, which are public, end it early.
package enum ConstantTime {
    package static func equal(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        return zip(a, b).reduce(0) { $0 | ($1.0 ^ $1.1) } == 0
    }
}
