import Foundation

/// A record value on a Herald topic: JSON with a format version `"v"` and a `"kind"`, next to the message's own fields,
/// so that `kcat` shows something readable and a consumer knows what it is decoding.
package protocol WireMessage: Codable, Sendable, Equatable {
    /// The value of `"kind"`, e.g. `"dead_letter"`.
    static var kind: String { get }
    /// The format version this code writes. Readers accept versions up to it.
    static var version: Int { get }
}

/// Why a record value could not be decoded.
package struct WireError: Error, CustomStringConvertible, Equatable {
    package var reason: String
    package var description: String { "wire format: \(reason)" }
}

/// Encoding and decoding of wire messages.
package enum Wire {
    package static func encode<M: WireMessage>(_ message: M) throws -> [UInt8] {
        try WireEncoder.encode(Envelope(message: message))
    }

    /// The same bytes through Foundation's `JSONEncoder` with the wire settings: the reference `WireEncoder` is tested
    /// against.
    package static func encodeWithFoundation<M: WireMessage>(_ message: M) throws -> [UInt8] {
        Array(try encoder.encode(Envelope(message: message)))
    }

    /// Reads the text once (`JSONParser`) and the envelope and the message from that tree (`WireDecoder`). Foundation's
    /// `JSONDecoder` was 19% of the notifier's push path: it scanned the text twice (envelope, then message) and
    /// decoded through its generic containers.
    package static func decode<M: WireMessage>(_ type: M.Type, from bytes: [UInt8]) throws(WireError) -> M {
        let tree: JSONValue
        do {
            tree = try JSONParser.parse(bytes)
        } catch {
            throw WireError(reason: "not a Herald message: malformed JSON")
        }
        let header: Header
        /// A member's last value, as the decoder reads a name given twice.
        func member(_ name: String) -> JSONValue? {
            guard case .object(let members) = tree else { return nil }
            return members.last { $0.key == name }?.value
        }
        if case .number(let version)? = member("v"), let v = Int(version), case .string(let kind)? = member("kind") {
            header = Header(v: v, kind: kind)
        } else {
            // The common case read straight from the tree; the decoder says what is wrong with the others.
            do {
                header = try WireDecoder.decode(Header.self, from: tree)
            } catch {
                throw WireError(reason: "not a Herald message: \(describe(error))")
            }
        }
        try check(header, M.self)
        do {
            return try WireDecoder.decode(M.self, from: tree)
        } catch {
            throw WireError(reason: "invalid \(M.kind): \(describe(error))")
        }
    }

    /// A value that is not a message (a JSON column of a row: no envelope) in the wire's form, without Foundation's
    /// encoder (the notifier writes a ledger row's target twice per send).
    package static func encodeValue(_ value: some Encodable) throws -> [UInt8] {
        try WireEncoder.encode(value)
    }

    /// Reads what `encodeValue` (or Foundation's `JSONEncoder`) wrote.
    package static func decodeValue<T: Decodable>(_ type: T.Type, from bytes: [UInt8]) throws -> T {
        try WireDecoder.decode(type, from: try JSONParser.parse(bytes))
    }

    /// The same through Foundation's `JSONDecoder`: the reference `WireDecoder` is tested against.
    package static func decodeWithFoundation<M: WireMessage>(_ type: M.Type, from bytes: [UInt8]) throws(WireError) -> M {
        let header: Header
        do {
            header = try decoder.decode(Header.self, from: Data(bytes))
        } catch {
            throw WireError(reason: "not a Herald message: \(describe(error))")
        }
        try check(header, M.self)
        do {
            return try decoder.decode(M.self, from: Data(bytes))
        } catch {
            throw WireError(reason: "invalid \(M.kind): \(describe(error))")
        }
    }

    private static func check<M: WireMessage>(_ header: Header, _ type: M.Type) throws(WireError) {
        guard header.kind == M.kind else {
            throw WireError(reason: "expected kind \"\(M.kind)\", got \"\(header.kind)\"")
        }
        guard (1...M.version).contains(header.v) else {
            throw WireError(reason: "\(M.kind) version \(header.v) is not supported (this build reads 1…\(M.version))")
        }
    }

    private struct Header: Decodable {
        var v: Int
        var kind: String
    }

    /// Writes `v` and `kind` into the same JSON object as the message's fields.
    private struct Envelope<M: WireMessage>: Encodable {
        var message: M
        enum Keys: String, CodingKey { case v, kind }
        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: Keys.self)
            try container.encode(M.version, forKey: .v)
            try container.encode(M.kind, forKey: .kind)
            try message.encode(to: encoder)
        }
    }

    private static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .custom { date, encoder in
            var container = encoder.singleValueContainer()
            try container.encode(WireTime.format(date))
        }
        return encoder
    }()

    private static let decoder: JSONDecoder = {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .custom { decoder in
            let container = try decoder.singleValueContainer()
            let text = try container.decode(String.self)
            guard let date = WireTime.parse(text) else {
                throw DecodingError.dataCorruptedError(
                    in: container, debugDescription: "expected an ISO-8601 UTC time, got \"\(text)\"")
            }
            return date
        }
        return decoder
    }()

    private static func describe(_ error: any Error) -> String {
        switch error {
        case DecodingError.keyNotFound(let key, let context):
            return "missing field \(path(context.codingPath + [key]))"
        case DecodingError.typeMismatch(_, let context), DecodingError.valueNotFound(_, let context):
            return "field \(path(context.codingPath)): \(context.debugDescription)"
        case DecodingError.dataCorrupted(let context):
            return context.codingPath.isEmpty
                ? "malformed JSON" : "field \(path(context.codingPath)): \(context.debugDescription)"
        default:
            return "\(error)"
        }
    }

    private static func path(_ keys: [any CodingKey]) -> String {
        keys.map { $0.intValue.map { "[\($0)]" } ?? $0.stringValue }.joined(separator: ".")
    }
}
