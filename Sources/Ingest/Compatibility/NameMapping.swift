import Foundation
import Shared

/// Turns the free-text names of Segment's and Braze's APIs (`Order Completed`, `firstName`, up to 255 characters) into
/// Herald's `[a-zA-Z0-9_]{1,30}` (docs/ingest.md, "Names"):
///
/// 1. accents are removed (`Café` → `Cafe`), letters of other scripts and every other character become separators;
/// 2. a word boundary inside camelCase becomes a separator (`firstName` → `first Name`, `HTTPServer` → `HTTP Server`);
/// 3. the words are joined with `_`: uppercase for event names (`ORDER_COMPLETED`), lowercase for attribute names
///    (`first_name`);
/// 4. a result longer than 30 keeps its first 21 characters and ends with `_` and 8 hexadecimal digits of a hash of
///    the original name, so that two long names that share a beginning stay apart; a name with no letter or digit
///    at all is `E_<hash>` (events) or `a_<hash>` (attributes).
///
/// Names that differ only in case, spacing or punctuation (`Order Completed`, `order-completed`, `orderCompleted`) are
/// the same event on purpose: that is how people mean them, and how Herald compares names anyway.
enum NameMapping {
    enum Kind { case event, attribute }

    /// The longest name Herald takes, and how much of it a shortened name keeps before its hash.
    static let maxLength = Limits.attributeName
    static let keptBeforeHash = 21

    /// Herald's name for `text`, and whether it had to be shortened with a hash (a lossy change the response reports).
    static func map(_ text: String, as kind: Kind) -> (name: String, shortened: Bool) {
        let words = self.words(text)
        let hash = hashText(text, uppercase: kind == .event)
        guard !words.isEmpty else { return ((kind == .event ? "E_" : "a_") + hash, true) }
        var joined = words.joined(separator: "_")
        joined = kind == .event ? joined.uppercased() : joined.lowercased()
        guard joined.utf8.count > maxLength else { return (joined, false) }
        var kept = String(joined.prefix(keptBeforeHash))
        while kept.hasSuffix("_") { kept.removeLast() }
        return ("\(kept)_\(hash)", true)
    }

    /// The ASCII words of `text`, split at separators and at camelCase boundaries.
    static func words(_ text: String) -> [String] {
        let folded = text.folding(options: [.diacriticInsensitive, .widthInsensitive], locale: nil)
        var words: [String] = []
        var current: [UInt8] = []
        let bytes = Array(folded.unicodeScalars.map { $0.isASCII ? UInt8($0.value) : 0 })
        func isUpper(_ byte: UInt8) -> Bool { (0x41...0x5A).contains(byte) }
        func isLower(_ byte: UInt8) -> Bool { (0x61...0x7A).contains(byte) }
        func isDigit(_ byte: UInt8) -> Bool { (0x30...0x39).contains(byte) }
        func flush() {
            if !current.isEmpty { words.append(String(decoding: current, as: UTF8.self)) }
            current = []
        }
        for (index, byte) in bytes.enumerated() {
            guard isUpper(byte) || isLower(byte) || isDigit(byte) else {
                flush()
                continue
            }
            if isUpper(byte), let previous = current.last {
                let next = index + 1 < bytes.count ? bytes[index + 1] : 0
                // `firstName`, `item2Price`: a capital after a small letter or a digit; `HTTPServer`: the last capital
                // of a run that a small letter follows.
                if isLower(previous) || isDigit(previous) || (isUpper(previous) && isLower(next)) { flush() }
            }
            current.append(byte)
        }
        flush()
        return words
    }

    /// 8 hexadecimal digits of FNV-1a (32 bits) over the name's UTF-8: stable across processes and versions, which
    /// Swift's `Hasher` is not.
    static func hashText(_ text: String, uppercase: Bool) -> String {
        var hash: UInt32 = 0x811C_9DC5
        for byte in text.utf8 {
            hash ^= UInt32(byte)
            hash &*= 0x0100_0193
        }
        let hex = String(hash, radix: 16)
        let padded = String(repeating: "0", count: 8 - hex.count) + hex
        return uppercase ? padded.uppercased() : padded
    }
}
