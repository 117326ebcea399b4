import Foundation

/// base64url without padding (JWT, inbox cursors, unsubscribe links).
enum Base64URL {
    static func encode<Bytes: Sequence>(_ bytes: Bytes) -> String where Bytes.Element == UInt8 {
        Data(bytes).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    /// The bytes of a canonical encoding (as `encode` writes it), nil for anything else: the last character's unused
    /// bits must be zero, so that a token has one spelling and any changed character changes it (a changed unused bit
    /// used to decode to the same bytes, and an unsubscribe link so altered still verified).
    static func decode(_ text: String) -> [UInt8]? {
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while base64.count % 4 != 0 { base64 += "=" }
        guard let bytes = Data(base64Encoded: base64).map(Array.init), encode(bytes) == text else { return nil }
        return bytes
    }
}
