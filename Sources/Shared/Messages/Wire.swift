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
        Array(try encoder.encode(Envelope(message: message)))
    }

    package static func decode<M: WireMessage>(_ type: M.Type, from bytes: [UInt8]) throws(WireError) -> M {
        let header: Header
        do {
            header = try decoder.decode(Header.self, from: Data(bytes))
        } catch {
            throw WireError(reason: "not a Herald message: \(describe(error))")
        }
        guard header.kind == M.kind else {
            throw WireError(reason: "expected kind \"\(M.kind)\", got \"\(header.kind)\"")
        }
        guard (1...M.version).contains(header.v) else {
            throw WireError(reason: "\(M.kind) version \(header.v) is not supported (this build reads 1…\(M.version))")
        }
        do {
            return try decoder.decode(M.self, from: Data(bytes))
        } catch {
            throw WireError(reason: "invalid \(M.kind): \(describe(error))")
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

/// Times on the wire: ISO-8601 in UTC with milliseconds, e.g. `2026-11-22T11:40:54.123Z`.
package enum WireTime {
    private static let style = Date.ISO8601FormatStyle(includingFractionalSeconds: true, timeZone: .gmt)
    private static let plain = Date.ISO8601FormatStyle(timeZone: .gmt)

    /// Rounds to the nearest millisecond (a formatter would truncate 0.123 stored as 0.12299… to .122).
    package static func format(_ date: Date) -> String {
        let milliseconds = Int64((date.timeIntervalSince1970 * 1000).rounded())
        var seconds = time_t(milliseconds.floorDivided(by: 1000))
        var parts = tm()
        gmtime_r(&seconds, &parts)
        func pad(_ value: Int64, _ width: Int) -> String {
            let digits = String(value)
            return String(repeating: "0", count: max(0, width - digits.count)) + digits
        }
        let date = "\(pad(Int64(parts.tm_year) + 1900, 4))-\(pad(Int64(parts.tm_mon) + 1, 2))-\(pad(Int64(parts.tm_mday), 2))"
        let time = "\(pad(Int64(parts.tm_hour), 2)):\(pad(Int64(parts.tm_min), 2)):\(pad(Int64(parts.tm_sec), 2))"
        return "\(date)T\(time).\(pad(milliseconds - milliseconds.floorDivided(by: 1000) * 1000, 3))Z"
    }

    package static func parse(_ text: String) -> Date? {
        (try? style.parse(text)) ?? (try? plain.parse(text))
    }
}

/// What could not be processed, with the reason and the original record (`herald.dlq`, keyed like the original).
package struct DeadLetter: WireMessage {
    package static let kind = "dead_letter"
    package static let version = 1

    /// Which service gave up on the record.
    package var service: String
    package var reason: String
    package var topic: String
    package var partition: Int32
    package var offset: Int64
    /// The original key and value as UTF-8 text when they are valid UTF-8, else base64 with `encoding: "base64"`.
    package var key: String?
    package var value: String?
    package var encoding: String
    package var at: Date

    package init(service: String, reason: String, record: KafkaRecord, at: Date) {
        let textual = [record.key, record.value].allSatisfy { bytes in
            bytes.map { String(validating: $0, as: UTF8.self) != nil } ?? true
        }
        func render(_ bytes: [UInt8]?) -> String? {
            bytes.map { textual ? String(decoding: $0, as: UTF8.self) : Data($0).base64EncodedString() }
        }
        self.service = service
        self.reason = reason
        self.topic = record.topic
        self.partition = record.partition
        self.offset = record.offset
        self.key = render(record.key)
        self.value = render(record.value)
        self.encoding = textual ? "utf8" : "base64"
        self.at = at
    }
}

extension Int64 {
    fileprivate func floorDivided(by divisor: Int64) -> Int64 {
        let quotient = self / divisor
        return (self % divisor != 0 && (self < 0) != (divisor < 0)) ? quotient - 1 : quotient
    }
}
