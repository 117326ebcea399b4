import Foundation

/// Reads a `Decodable` from a JSON tree parsed by `JSONParser`: dates as `WireTime`, numbers from their literal text.
/// What `Wire.decode` uses instead of Foundation's `JSONDecoder`, which was the largest share of the notifier's claim
/// (a send request and a contact snapshot per send; docs/performance.md). Errors are Foundation's `DecodingError`s
/// with the same coding paths, so that a refusal names the same field; `WireTests` holds it to `JSONDecoder`.
enum WireDecoder {
    static func decode<T: Decodable>(_ type: T.Type, from value: JSONValue) throws -> T {
        try read(type, value, codingPath: [])
    }

    /// A value of `type` at `codingPath`: the wire's scalars here, anything else through its `init(from:)`.
    fileprivate static func read<T: Decodable>(_ type: T.Type, _ value: JSONValue, codingPath: [any CodingKey]) throws -> T {
        if case .null = value, !(type is any OptionalMarker.Type) {
            throw DecodingError.valueNotFound(
                type, .init(codingPath: codingPath, debugDescription: "Expected \(type) value but found null instead."))
        }
        switch type {
        case is String.Type:
            guard case .string(let text) = value else { throw mismatch(type, value, codingPath) }
            return text as! T
        case is JSONValue.Type:
            return value as! T
        case is Bool.Type:
            guard case .bool(let flag) = value else { throw mismatch(type, value, codingPath) }
            return flag as! T
        case is Date.Type:
            guard case .string(let text) = value else { throw mismatch(type, value, codingPath) }
            guard let date = WireTime.parse(text) else {
                throw DecodingError.dataCorrupted(
                    .init(codingPath: codingPath, debugDescription: "expected an ISO-8601 UTC time, got \"\(text)\""))
            }
            return date as! T
        case is Double.Type:
            return try double(value, codingPath) as! T
        case is Float.Type:
            return Float(try double(value, codingPath)) as! T
        case let integer as any FixedWidthInteger.Type:
            return try Self.integer(integer, value, codingPath) as! T
        default:
            return try T(from: TreeDecoder(value: value, codingPath: codingPath))
        }
    }

    private static func double(_ value: JSONValue, _ codingPath: [any CodingKey]) throws -> Double {
        guard case .number(let text) = value else { throw mismatch(Double.self, value, codingPath) }
        guard let number = Double(text) else { throw notRepresentable(text, Double.self, codingPath) }
        return number
    }

    /// An integer from its literal: `12`, or an integral `1.0`/`1e3` as Foundation reads them; `1.5` is refused.
    private static func integer<I: FixedWidthInteger>(_ type: I.Type, _ value: JSONValue, _ codingPath: [any CodingKey]) throws -> I {
        guard case .number(let text) = value else { throw mismatch(type, value, codingPath) }
        if let exact = I(text) { return exact }
        if let number = Double(text), number.rounded() == number, let exact = I(exactly: number) { return exact }
        throw notRepresentable(text, type, codingPath)
    }

    private static func notRepresentable(_ text: String, _ type: Any.Type, _ codingPath: [any CodingKey]) -> DecodingError {
        .dataCorrupted(.init(codingPath: codingPath, debugDescription: "Parsed JSON number <\(text)> does not fit in \(type)."))
    }

    fileprivate static func mismatch(_ type: Any.Type, _ value: JSONValue, _ codingPath: [any CodingKey]) -> DecodingError {
        .typeMismatch(type, .init(codingPath: codingPath, debugDescription: "Expected to decode \(type) but found \(value.typeName) instead."))
    }

    fileprivate struct TreeDecoder: Decoder {
        let value: JSONValue
        let codingPath: [any CodingKey]
        var userInfo: [CodingUserInfoKey: Any] { [:] }

        func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
            guard case .object(let members) = value else { throw mismatch([String: Any].self, value, codingPath) }
            return KeyedDecodingContainer(KeyedContainer<Key>(members: members, codingPath: codingPath))
        }

        func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
            guard case .array(let items) = value else { throw mismatch([Any].self, value, codingPath) }
            return UnkeyedContainer(items: items, codingPath: codingPath)
        }

        func singleValueContainer() throws -> any SingleValueDecodingContainer {
            SingleContainer(value: value, codingPath: codingPath)
        }
    }

    fileprivate struct KeyedContainer<Key: CodingKey>: KeyedDecodingContainerProtocol {
        /// In their order; a name given twice reads as its last value. Searched in place: a message's objects have a
        /// few to twenty members, and a dictionary built per object cost more (hashing every name) than it saved.
        let members: [JSONMember]
        let codingPath: [any CodingKey]

        init(members: [JSONMember], codingPath: [any CodingKey]) {
            self.members = members
            self.codingPath = codingPath
        }

        private func lookup(_ name: String) -> JSONValue? {
            for member in members.reversed() where member.key == name { return member.value }
            return nil
        }

        var allKeys: [Key] { members.compactMap { Key(stringValue: $0.key) } }

        func contains(_ key: Key) -> Bool { lookup(key.stringValue) != nil }

        /// One lookup (the protocol's default asks `contains`, then `decodeNil`, then `decode`).
        func decodeIfPresent<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T? {
            guard let value = lookup(key.stringValue) else { return nil }
            if case .null = value { return nil }
            return try read(type, value, codingPath: codingPath + [key])
        }

        private func value(_ key: Key) throws -> JSONValue {
            guard let value = lookup(key.stringValue) else {
                throw DecodingError.keyNotFound(
                    key, .init(codingPath: codingPath, debugDescription: "No value associated with key \(key.stringValue)."))
            }
            return value
        }

        func decodeNil(forKey key: Key) throws -> Bool {
            if case .null = try value(key) { return true }
            return false
        }

        func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
            try read(type, try value(key), codingPath: codingPath + [key])
        }

        func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws -> KeyedDecodingContainer<NestedKey> {
            try TreeDecoder(value: try value(key), codingPath: codingPath + [key]).container(keyedBy: type)
        }

        func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
            try TreeDecoder(value: try value(key), codingPath: codingPath + [key]).unkeyedContainer()
        }

        func superDecoder() throws -> any Decoder {
            TreeDecoder(value: lookup("super") ?? .null, codingPath: codingPath)
        }

        func superDecoder(forKey key: Key) throws -> any Decoder {
            TreeDecoder(value: lookup(key.stringValue) ?? .null, codingPath: codingPath + [key])
        }
    }

    fileprivate struct UnkeyedContainer: UnkeyedDecodingContainer {
        let items: [JSONValue]
        let codingPath: [any CodingKey]
        var currentIndex = 0

        init(items: [JSONValue], codingPath: [any CodingKey]) {
            self.items = items
            self.codingPath = codingPath
        }

        var count: Int? { items.count }
        var isAtEnd: Bool { currentIndex >= items.count }

        private var path: [any CodingKey] { codingPath + [WireIndexKey(currentIndex)] }

        private mutating func next(_ type: Any.Type) throws -> JSONValue {
            guard !isAtEnd else {
                throw DecodingError.valueNotFound(type, .init(codingPath: path, debugDescription: "Unkeyed container is at end."))
            }
            defer { currentIndex += 1 }
            return items[currentIndex]
        }

        mutating func decodeNil() throws -> Bool {
            guard !isAtEnd, case .null = items[currentIndex] else { return false }
            currentIndex += 1
            return true
        }

        mutating func decode<T: Decodable>(_ type: T.Type) throws -> T {
            let path = self.path
            return try read(type, try next(type), codingPath: path)
        }

        mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws -> KeyedDecodingContainer<NestedKey> {
            let path = self.path
            return try TreeDecoder(value: try next([String: Any].self), codingPath: path).container(keyedBy: type)
        }

        mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer {
            let path = self.path
            return try TreeDecoder(value: try next([Any].self), codingPath: path).unkeyedContainer()
        }

        mutating func superDecoder() throws -> any Decoder {
            let path = self.path
            return TreeDecoder(value: try next(Any.self), codingPath: path)
        }
    }

    fileprivate struct SingleContainer: SingleValueDecodingContainer {
        let value: JSONValue
        let codingPath: [any CodingKey]

        func decodeNil() -> Bool {
            if case .null = value { return true }
            return false
        }

        func decode<T: Decodable>(_ type: T.Type) throws -> T { try read(type, value, codingPath: codingPath) }
    }
}

/// Optional types, whatever they wrap: a null is theirs to read (as nil).
private protocol OptionalMarker {}
extension Optional: OptionalMarker {}
