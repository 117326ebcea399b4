import Foundation

/// How an SMS travels: in GSM 03.38's 7-bit alphabet when every character is in its basic table or its extension
/// table (whose characters take two septets), else in UCS-2 (UTF-16). One segment holds 160 septets or 70 UTF-16 units;
/// a longer message goes in parts of 153 or 67 (the rest of each part is the concatenation header), a character never
/// split between two parts. Providers bill per segment; Twilio takes a body of at most 1,600 characters
/// (docs/notifier.md, "Provider limits").
package enum SMSSegments {
    package enum Encoding: String, Sendable, CaseIterable { case gsm7, ucs2 }

    /// The most characters of one SMS body the provider takes (Twilio's `Body`).
    package static let maxCharacters = 1600

    /// GSM 03.38's basic table (one septet each) and its extension table (an escape and a septet).
    static let basic = Set(
        "@£$¥èéùìòÇ\nØø\rÅåΔ_ΦΓΛΩΠΨΣΘΞÆæßÉ !\"#¤%&'()*+,-./0123456789:;<=>?¡ABCDEFGHIJKLMNOPQRSTUVWXYZÄÖÑÜ§¿abcdefghijklmnopqrstuvwxyzäöñüà"
            .unicodeScalars)
    static let extended = Set("\u{0C}^{}\\[~]|€".unicodeScalars)

    /// The encoding a text needs and how many segments it takes.
    package static func count(_ text: String) -> (encoding: Encoding, segments: Int) {
        let scalars = text.unicodeScalars
        if scalars.allSatisfy({ basic.contains($0) || extended.contains($0) }) {
            return (.gsm7, parts(scalars.map { extended.contains($0) ? 2 : 1 }, single: 160, multi: 153))
        }
        return (.ucs2, parts(scalars.map { $0.value > 0xFFFF ? 2 : 1 }, single: 70, multi: 67))
    }

    /// How many parts characters of these sizes fill: one when they fit `single`, else parts of at most `multi`, each
    /// character whole in one part.
    private static func parts(_ sizes: [Int], single: Int, multi: Int) -> Int {
        guard sizes.reduce(0, +) > single else { return 1 }
        var parts = 1
        var filled = 0
        for size in sizes {
            if filled + size > multi {
                parts += 1
                filled = 0
            }
            filled += size
        }
        return parts
    }

    /// How far a body is over what an SMS send takes (the notifier fails it `body_too_long` with this), or nil.
    package static func tooLong(_ text: String) -> String? {
        let characters = text.unicodeScalars.count
        guard characters > maxCharacters else { return nil }
        return "\(characters) characters, the SMS provider takes \(maxCharacters)"
    }
}
