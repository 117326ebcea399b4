import Foundation

/// One object of the configuration on `herald.config` (compacted, one partition, key `<kind>/<project>/<id>`):
/// `{"v":1,"kind":"config","file":…,"applied_at":…,"object":{…}}` with the object as written in its file; a tombstone
/// for a removed object. `herald config apply` writes it, the orchestrator reads it, both through this type.
package struct ConfigRecord: Sendable, Equatable {
    package static let version = 1

    /// The file the object came from (`file:line` errors name it).
    package var file: String
    package var appliedAt: Date
    package var object: ConfigNode

    package init(file: String, appliedAt: Date, object: ConfigNode) {
        self.file = file
        self.appliedAt = appliedAt
        self.object = object
    }

    package var value: [UInt8] {
        JSONValue.object([
            JSONMember("v", .number(String(Self.version))), JSONMember("kind", .string("config")),
            JSONMember("file", .string(file)), JSONMember("applied_at", .string(WireTime.format(appliedAt))),
            JSONMember("object", object.json),
        ]).serialized
    }

    /// Reads a record value; a missing file reads as `herald.config`, a missing time as the epoch.
    package static func read(_ bytes: [UInt8]) throws -> ConfigRecord {
        let value = try JSONParser.parse(bytes)
        guard value["kind"] == .string("config"), value["v"] == .number("1"), let object = value["object"] else {
            throw WireError(reason: "not a config record of format version 1")
        }
        return ConfigRecord(
            file: value["file"]?.stringValue ?? "herald.config",
            appliedAt: value["applied_at"]?.stringValue.flatMap(WireTime.parse) ?? Date(timeIntervalSince1970: 0),
            object: ConfigNode(json: object))
    }
}
