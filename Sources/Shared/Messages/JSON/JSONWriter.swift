/// Compact JSON text written straight into bytes, one value after another, with no tree in between: for a message
/// written once per request on a hot path (an ingest record), where building a `JSONValue` first and walking it
/// after cost more than the writing itself. A `JSONValue` is written through it too, so that both give the same bytes.
///
/// The writer only places commas: a key must be followed by one value, and objects and arrays closed in order.
package struct JSONWriter {
    package private(set) var bytes: [UInt8] = []
    /// Whether the next value or key follows a value at the same level (a comma first).
    private var afterValue = false

    package init(capacity: Int = 256) { bytes.reserveCapacity(capacity) }

    private mutating func separate() {
        if afterValue { bytes.append(UInt8(ascii: ",")) }
    }

    package mutating func openObject() { open(UInt8(ascii: "{")) }
    package mutating func closeObject() { close(UInt8(ascii: "}")) }
    package mutating func openArray() { open(UInt8(ascii: "[")) }
    package mutating func closeArray() { close(UInt8(ascii: "]")) }

    private mutating func open(_ bracket: UInt8) {
        separate()
        bytes.append(bracket)
        afterValue = false
    }

    private mutating func close(_ bracket: UInt8) {
        bytes.append(bracket)
        afterValue = true
    }

    /// A member's key; its value comes next.
    package mutating func key(_ key: String) {
        separate()
        JSON.appendString(key, to: &bytes)
        bytes.append(UInt8(ascii: ":"))
        afterValue = false
    }

    package mutating func string(_ value: String) {
        separate()
        JSON.appendString(value, to: &bytes)
        afterValue = true
    }

    /// A number's literal text, as `JSONValue.number` holds it.
    package mutating func number(_ literal: String) {
        separate()
        bytes.append(contentsOf: literal.utf8)
        afterValue = true
    }

    package mutating func bool(_ value: Bool) {
        separate()
        bytes.append(contentsOf: (value ? "true" : "false").utf8)
        afterValue = true
    }

    package mutating func null() {
        separate()
        bytes.append(contentsOf: "null".utf8)
        afterValue = true
    }

    /// A parsed or built value, members in their order.
    package mutating func value(_ value: JSONValue) {
        switch value {
        case .null: null()
        case .bool(let flag): bool(flag)
        case .number(let literal): number(literal)
        case .string(let text): string(text)
        case .array(let items):
            openArray()
            for item in items { self.value(item) }
            closeArray()
        case .object(let members):
            openObject()
            for member in members {
                key(member.key)
                self.value(member.value)
            }
            closeObject()
        }
    }

    /// `"key":"value"`.
    package mutating func member(_ key: String, _ value: String) {
        self.key(key)
        string(value)
    }

    /// `"key":<value>`.
    package mutating func member(_ key: String, _ value: JSONValue) {
        self.key(key)
        self.value(value)
    }
}
