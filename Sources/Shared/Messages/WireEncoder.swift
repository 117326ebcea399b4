import Foundation

/// Writes an `Encodable` wire message as JSON bytes with sorted keys, dates as `WireTime`, and no escaped slashes: the
/// output of Foundation's `JSONEncoder` with the wire settings, without its cost (a contact snapshot per profile change
/// and a send request per decision are encoded on the orchestrator's hot path; Foundation's encoder was a tenth of the
/// apply time, docs/performance.md). `Wire.encode` uses it; `WireTests` holds it to Foundation's output.
enum WireEncoder {
    /// As `JSONEncoder` writes a floating-point number: the shortest form, without a trailing `.0` (nil: not finite).
    static func numberText(_ number: Double) -> String? {
        guard number.isFinite else { return nil }
        let text = "\(number)"
        return text.hasSuffix(".0") ? String(text.dropLast(2)) : text
    }

    static func encode(_ value: some Encodable) throws -> [UInt8] {
        let root = Slot()
        try root.store(value, codingPath: [])
        var out: [UInt8] = []
        out.reserveCapacity(256)
        try root.value.write(to: &out)
        return out
    }

    /// One JSON value being built; objects and arrays are shared boxes, so that a container taken twice from the same
    /// encoder (a message's fields after the envelope's `v` and `kind`) adds to the same object.
    fileprivate enum Node {
        case null
        case literal(String)
        case string(String)
        case object(ObjectBox)
        case array(ArrayBox)

        func write(to out: inout [UInt8]) throws {
            switch self {
            case .null: out.append(contentsOf: "null".utf8)
            case .literal(let text): out.append(contentsOf: text.utf8)
            case .string(let text): JSON.appendString(text, to: &out)
            case .object(let box):
                out.append(UInt8(ascii: "{"))
                for (index, member) in box.members.sorted(by: { $0.key < $1.key }).enumerated() {
                    if index > 0 { out.append(UInt8(ascii: ",")) }
                    JSON.appendString(member.key, to: &out)
                    out.append(UInt8(ascii: ":"))
                    try member.value.value.write(to: &out)
                }
                out.append(UInt8(ascii: "}"))
            case .array(let box):
                out.append(UInt8(ascii: "["))
                for (index, item) in box.items.enumerated() {
                    if index > 0 { out.append(UInt8(ascii: ",")) }
                    try item.value.write(to: &out)
                }
                out.append(UInt8(ascii: "]"))
            }
        }
    }

    fileprivate final class ObjectBox { var members: [String: Slot] = [:] }
    fileprivate final class ArrayBox { var items: [Slot] = [] }

    /// Where one value goes.
    fileprivate final class Slot {
        var value: Node = .null

        var object: ObjectBox {
            if case .object(let box) = value { return box }
            let box = ObjectBox()
            value = .object(box)
            return box
        }

        var array: ArrayBox {
            if case .array(let box) = value { return box }
            let box = ArrayBox()
            value = .array(box)
            return box
        }

        func store(_ encodable: some Encodable, codingPath: [any CodingKey]) throws {
            switch encodable {
            case let date as Date: value = .string(WireTime.format(date))
            case let data as Data: value = .string(data.base64EncodedString())
            case let url as URL: value = .string(url.absoluteString)
            case let text as String: value = .string(text)
            case let json as JSONValue: store(json)
            case let flag as Bool: value = .literal(flag ? "true" : "false")
            case let number as Double: value = .literal(try Self.literal(number, codingPath))
            case let number as Float: value = .literal(try Self.literal(Double(number), codingPath))
            case let number as any BinaryInteger: value = .literal(String(describing: number))
            default: try encodable.encode(to: TreeEncoder(slot: self, codingPath: codingPath))
            }
        }

        /// A JSON value as it is: numbers with their literal text, an object's members sorted on writing like any other.
        func store(_ json: JSONValue) {
            switch json {
            case .null: value = .null
            case .bool(let flag): value = .literal(flag ? "true" : "false")
            case .number(let text): value = .literal(text)
            case .string(let text): value = .string(text)
            case .array(let items):
                let box = array
                for item in items {
                    let slot = Slot()
                    slot.store(item)
                    box.items.append(slot)
                }
            case .object(let members):
                let box = object
                for member in members {
                    let slot = Slot()
                    slot.store(member.value)
                    box.members[member.key] = slot
                }
            }
        }

        static func literal(_ number: Double, _ codingPath: [any CodingKey]) throws -> String {
            guard let text = numberText(number) else {
                throw EncodingError.invalidValue(
                    number, .init(codingPath: codingPath, debugDescription: "\(number) is not a JSON number"))
            }
            return text
        }
    }

    fileprivate struct TreeEncoder: Encoder {
        let slot: Slot
        let codingPath: [any CodingKey]
        var userInfo: [CodingUserInfoKey: Any] { [:] }

        func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
            KeyedEncodingContainer(KeyedContainer<Key>(box: slot.object, codingPath: codingPath))
        }

        func unkeyedContainer() -> any UnkeyedEncodingContainer {
            UnkeyedContainer(box: slot.array, codingPath: codingPath)
        }

        func singleValueContainer() -> any SingleValueEncodingContainer {
            SingleContainer(slot: slot, codingPath: codingPath)
        }
    }

    fileprivate struct KeyedContainer<Key: CodingKey>: KeyedEncodingContainerProtocol {
        let box: ObjectBox
        let codingPath: [any CodingKey]

        private func slot(_ key: Key) -> Slot {
            let slot = Slot()
            box.members[key.stringValue] = slot
            return slot
        }

        mutating func encodeNil(forKey key: Key) throws { slot(key).value = .null }

        mutating func encode(_ value: some Encodable, forKey key: Key) throws {
            try slot(key).store(value, codingPath: codingPath + [key])
        }

        mutating func nestedContainer<NestedKey: CodingKey>(
            keyedBy keyType: NestedKey.Type, forKey key: Key
        ) -> KeyedEncodingContainer<NestedKey> {
            KeyedEncodingContainer(KeyedContainer<NestedKey>(box: slot(key).object, codingPath: codingPath + [key]))
        }

        mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
            UnkeyedContainer(box: slot(key).array, codingPath: codingPath + [key])
        }

        mutating func superEncoder() -> any Encoder {
            TreeEncoder(slot: slot(Key(stringValue: "super")!), codingPath: codingPath)
        }

        mutating func superEncoder(forKey key: Key) -> any Encoder {
            TreeEncoder(slot: slot(key), codingPath: codingPath + [key])
        }
    }

    fileprivate struct UnkeyedContainer: UnkeyedEncodingContainer {
        let box: ArrayBox
        let codingPath: [any CodingKey]
        var count: Int { box.items.count }

        private func slot() -> Slot {
            let slot = Slot()
            box.items.append(slot)
            return slot
        }

        mutating func encodeNil() throws { slot().value = .null }

        mutating func encode(_ value: some Encodable) throws {
            let path = codingPath + [WireIndexKey(count)]
            try slot().store(value, codingPath: path)
        }

        mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type) -> KeyedEncodingContainer<NestedKey> {
            KeyedEncodingContainer(KeyedContainer<NestedKey>(box: slot().object, codingPath: codingPath + [WireIndexKey(count)]))
        }

        mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer {
            UnkeyedContainer(box: slot().array, codingPath: codingPath + [WireIndexKey(count)])
        }

        mutating func superEncoder() -> any Encoder { TreeEncoder(slot: slot(), codingPath: codingPath + [WireIndexKey(count)]) }
    }

    fileprivate struct SingleContainer: SingleValueEncodingContainer {
        let slot: Slot
        let codingPath: [any CodingKey]

        mutating func encodeNil() throws { slot.value = .null }

        mutating func encode(_ value: some Encodable) throws { try slot.store(value, codingPath: codingPath) }
    }
}

/// The coding key of an array item (`Index 3`, as Foundation names it), in the coding paths errors name.
struct WireIndexKey: CodingKey {
    var stringValue: String { "Index \(intValue ?? 0)" }
    var intValue: Int?
    init(_ index: Int) { intValue = index }
    init?(stringValue: String) { nil }
    init?(intValue: Int) { self.intValue = intValue }
}
