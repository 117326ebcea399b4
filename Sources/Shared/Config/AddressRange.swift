#if canImport(Glibc)
import Glibc
#endif
import Foundation

/// An IPv4 or IPv6 range, `10.0.0.0/8`, `fd00::/8`, or one address (`192.0.2.7`).
package struct AddressRange: Sendable, Equatable {
    package var bytes: [UInt8]
    package var prefix: Int

    package init?(_ text: String) {
        let parts = text.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
        guard let bytes = Self.parse(String(parts[0])) else { return nil }
        let prefix = parts.count == 2 ? Int(parts[1]) : bytes.count * 8
        guard let prefix, (0...bytes.count * 8).contains(prefix) else { return nil }
        self.bytes = bytes
        self.prefix = prefix
    }

    package func contains(_ address: String) -> Bool {
        guard let other = Self.parse(address), other.count == bytes.count else { return false }
        var left = prefix
        for (mine, theirs) in zip(bytes, other) where left > 0 {
            let mask: UInt8 = left >= 8 ? 0xFF : ~(0xFF >> UInt8(left))
            if mine & mask != theirs & mask { return false }
            left -= 8
        }
        return true
    }

    /// The address's bytes (4 or 16); an IPv4-mapped IPv6 address (`::ffff:192.0.2.7`) as its IPv4 bytes.
    package static func parse(_ text: String) -> [UInt8]? {
        var v4 = in_addr()
        if inet_pton(AF_INET, text, &v4) == 1 { return withUnsafeBytes(of: &v4) { Array($0) } }
        var v6 = in6_addr()
        guard inet_pton(AF_INET6, text, &v6) == 1 else { return nil }
        let bytes = withUnsafeBytes(of: &v6) { Array($0) }
        if bytes.prefix(10).allSatisfy({ $0 == 0 }) && bytes[10] == 0xFF && bytes[11] == 0xFF { return Array(bytes.suffix(4)) }
        return bytes
    }
}
