import Foundation

/// A JSON value inside a wire message (a push's custom payload): written and read as the JSON it is. `WireEncoder` and
/// `WireDecoder` take it as it is (the literal text of numbers, its members' order on reading); through Foundation's
/// coders (the reference `WireTests` holds them to) numbers pass as `Double` and an object's members come sorted.
extension JSONValue: Codable, ExpressibleByStringLiteral {
    package init(stringLiteral text: String) { self = .string(text) }

    private struct Key: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    package init(from decoder: any Decoder) throws {
        if let single = try? decoder.singleValueContainer() {
            if single.decodeNil() {
                self = .null
                return
            }
            if let flag = try? single.decode(Bool.self) {
                self = .bool(flag)
                return
            }
            if let number = try? single.decode(Double.self), let text = WireEncoder.numberText(number) {
                self = .number(text)
                return
            }
            if let text = try? single.decode(String.self) {
                self = .string(text)
                return
            }
        }
        if var items = try? decoder.unkeyedContainer() {
            var values: [JSONValue] = []
            while !items.isAtEnd { values.append(try items.decode(JSONValue.self)) }
            self = .array(values)
            return
        }
        let object = try decoder.container(keyedBy: Key.self)
        self = .object(
            try object.allKeys.sorted { $0.stringValue < $1.stringValue }.map {
                JSONMember($0.stringValue, try object.decode(JSONValue.self, forKey: $0))
            })
    }

    package func encode(to encoder: any Encoder) throws {
        switch self {
        case .null:
            var single = encoder.singleValueContainer()
            try single.encodeNil()
        case .bool(let flag):
            var single = encoder.singleValueContainer()
            try single.encode(flag)
        case .number(let text):
            guard let number = Double(text) else {
                throw EncodingError.invalidValue(text, .init(codingPath: encoder.codingPath, debugDescription: "not a JSON number"))
            }
            var single = encoder.singleValueContainer()
            try single.encode(number)
        case .string(let text):
            var single = encoder.singleValueContainer()
            try single.encode(text)
        case .array(let items):
            var container = encoder.unkeyedContainer()
            for item in items { try container.encode(item) }
        case .object(let members):
            var container = encoder.container(keyedBy: Key.self)
            for member in members { try container.encode(member.value, forKey: Key(stringValue: member.key)) }
        }
    }
}
