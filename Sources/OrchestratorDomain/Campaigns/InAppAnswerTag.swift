import Crypto
import Foundation
import Liquid
import Shared

/// The `ETag` of an in-app sync's answer, a digest of what the answer is computed from rather than of the answer
/// itself, so that an app revalidating with `If-None-Match` (its usual sync) is told "unchanged" before any message is
/// rendered (docs/in-app.md, docs/performance.md "In-app syncs"). The inputs are everything a render reads besides the
/// message's templates: whose answer it is (the profile's custom id, the installation); each message shown, in order,
/// with its `version` (what the answer shows of its definition); the variant's language and the project's fallback;
/// the time zone `date` writes in; every variable the texts read, with its value; a start or end within the answer's
/// validity (the answer's `valid_until` is then shorter than the app's last one); and, when a shown message's text may
/// read the clock, the time of the sync. Eligibility (audience, re-eligibility, start and end) decides which messages
/// are shown, so it is in the tag through them.
struct InAppAnswerTag {
    private var bytes: [UInt8] = []

    init() { bytes.reserveCapacity(512) }

    /// The tag, as an `ETag` value (quoted).
    var value: String { "\"" + SHA256.hash(data: bytes).prefix(12).hexString + "\"" }

    /// A text, its length first: no two sequences of texts give the same bytes.
    mutating func add(_ text: String) {
        add(UInt64(text.utf8.count))
        bytes.append(contentsOf: text.utf8)
    }

    mutating func add(_ text: String?) {
        if let text {
            bytes.append(1)
            add(text)
        } else {
            bytes.append(0)
        }
    }

    mutating func add(_ number: UInt64) {
        withUnsafeBytes(of: number.littleEndian) { bytes.append(contentsOf: $0) }
    }

    /// A variable's value, its kind first, exactly (a float by its bits): two values that may render differently never
    /// give the same bytes.
    mutating func add(_ value: LiquidValue) {
        switch value {
        case .nil: bytes.append(0)
        case .bool(let flag): bytes.append(flag ? 2 : 1)
        case .int(let number):
            bytes.append(3)
            add(UInt64(bitPattern: Int64(number)))
        case .double(let number):
            bytes.append(4)
            add(number.bitPattern)
        case .string(let text):
            bytes.append(5)
            add(text)
        case .array(let items):
            bytes.append(6)
            add(UInt64(items.count))
            for item in items { add(item) }
        case .object(let object):
            bytes.append(7)
            add(object)
        case .range(let low, let high):
            bytes.append(8)
            add(UInt64(bitPattern: Int64(low)))
            add(UInt64(bitPattern: Int64(high)))
        }
    }

    /// What the texts read of `variables`: the value at each of `paths` (a root, or a root and a member named in the
    /// text, `LiquidTemplate.variablePaths`), so that a value no text reads (another attribute) leaves the tag as it is.
    mutating func add(_ variables: LiquidObject, at paths: Set<[String]>) {
        add(UInt64(paths.count))
        for path in paths.sorted(by: { $0.lexicographicallyPrecedes($1) }) {
            add(UInt64(path.count))
            for name in path { add(name) }
            let root = variables[path[0]] ?? .nil
            add(path.count > 1 ? root[.string(path[1])] : root)
        }
    }

    mutating func add(_ object: LiquidObject) {
        add(UInt64(object.count))
        for (key, value) in object.members {
            add(key)
            add(value)
        }
    }
}
