import Foundation
import Shared
import Testing

/// The writer that ingest records go through: the same bytes as the tree it replaces on the hot path.
@Suite("JSONWriter: bytes without a tree")
struct JSONWriterTests {
    static let attributes: [[(String, AttributeValue)]] = [
        [],
        [("name", .string("Basil \"the\" \\ herb\n\u{1}é"))],
        [("count", .integer(-42)), ("price", .double(23.99)), ("whole", .double(3)), ("big", .double(1e300))],
        [("in_stock", .bool(true)), ("off", .bool(false)), ("until", .date(Date(timeIntervalSince1970: 1_795_000_000.5)))],
        [("site", .url("https://example.com/a?b=c")), ("tags", .stringArray(["x", "", "y\"z"])), ("none", .stringArray([]))],
        [("owner", .object([("name", .string("Ada")), ("age", .integer(36)), ("pet", .object([("kind", .string("cat"))]))]))],
        [("items", .objectArray([[("sku", .string("a")), ("n", .integer(1))], [], [("tags", .stringArray(["q"]))]]))],
    ]

    @Test("typed attributes write the bytes typedObject's tree serializes to", arguments: attributes.indices)
    func typedAttributes(index: Int) {
        let members = Self.attributes[index]
        var writer = JSONWriter()
        AttributeValue.writeTyped(members, into: &writer)
        #expect(writer.bytes == AttributeValue.typedObject(members).serialized)
    }

    @Test("an event built from typed values reads back as the same event, and writes the same bytes again")
    func eventRoundTrip() throws {
        for (index, members) in Self.attributes.enumerated() {
            let event = ValidatedEvent(
                name: "PURCHASED", id: index.isMultiple(of: 2) ? "evt-\(index)" : nil,
                time: index == 3 ? Date(timeIntervalSince1970: 1_795_000_000) : nil, label: index == 1 ? "l" : nil,
                tags: index == 4 ? ["spring", "sale"] : nil, attributes: members)
            let read = try ValidatedEvent(wire: JSONParser.parse(event.serialized), path: "event")
            #expect(read.serialized == event.serialized)
            #expect(read.attributesJSON == AttributeValue.typedObject(members))
        }
    }

    @Test("commas go between values and members at every depth, none after an opening or a key")
    func commas() {
        let tree = JSONValue.object([
            JSONMember("a", .array([.number("1"), .array([]), .array([.number("2"), .array([.number("3")])]), .object([]), .null, .bool(false), .string("s")])),
            JSONMember("b", .object([JSONMember("c", .array([.object([JSONMember("d", .number("2"))])]))])),
            JSONMember("e", .string("")), JSONMember("f", .object([JSONMember("g", .null), JSONMember("h", .object([JSONMember("i", .bool(true))]))])),
        ])
        #expect(
            String(decoding: tree.serialized, as: UTF8.self)
                == #"{"a":[1,[],[2,[3]],{},null,false,"s"],"b":{"c":[{"d":2}]},"e":"","f":{"g":null,"h":{"i":true}}}"#)
    }
}
