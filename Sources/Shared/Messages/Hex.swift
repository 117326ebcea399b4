extension StringProtocol {
    /// Whether the text is exactly `count` lowercase hexadecimal digits (the form `hexString` writes: ids, cursors).
    package func isLowercaseHex(count: Int) -> Bool {
        utf8.count == count && utf8.allSatisfy { (48...57).contains($0) || (97...102).contains($0) }
    }
}

extension Sequence where Element == UInt8 {
    /// Lowercase hexadecimal, two digits a byte: the text of digests in ids (send ids, `apns-id`, proofs).
    /// `String(format: "%02x")` per byte was 5% of the notifier's push path (a `Locale`-aware format each time).
    package var hexString: String {
        let digits: [UInt8] = Array("0123456789abcdef".utf8)
        var bytes: [UInt8] = []
        bytes.reserveCapacity(underestimatedCount * 2)
        for byte in self {
            bytes.append(digits[Int(byte >> 4)])
            bytes.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
