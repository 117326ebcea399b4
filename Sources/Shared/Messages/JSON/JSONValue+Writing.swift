import Foundation

extension JSONValue {
    /// A JSON literal for a finite double that reads back as the same double.
    package static func literal(_ value: Double) -> String {
        let text = "\(value)"
        return text.contains(where: { $0 == "." || $0 == "e" || $0 == "E" }) ? text : text + ".0"
    }

    /// A time as the wire writes it (`WireTime`), null when there is none.
    package static func time(_ date: Date?) -> JSONValue {
        date.map { .string(WireTime.format($0)) } ?? .null
    }

    /// Compact JSON text, members in their order.
    package var serialized: [UInt8] {
        var writer = JSONWriter()
        writer.value(self)
        return writer.bytes
    }

    /// The same, as a string (for a TEXT column or a digest's input).
    package var serializedText: String { String(decoding: serialized, as: UTF8.self) }
}
