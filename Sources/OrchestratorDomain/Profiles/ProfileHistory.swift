import Foundation
import GRDB
import PartitionStore
import Shared

/// What an anonymous or alias-only profile carries to the profile it merges into (docs/orchestrator.md, braze-rules
/// §1.2): language, region, time zone, address and phone where the profile has none, custom attributes (with their
/// times), event aggregates and purchases.
struct ProfileHistory {
    let db: Database

    init(_ db: Database) { self.db = db }

    /// The natives an anonymous or alias-only profile hands on, each only where the profile has none (an alias-only
    /// profile may have an address: Braze's server API sets them).
    static let mergedNatives: [ProfileNative] = [.language, .region, .timezone, .email, .phoneNumber]

    /// The profile's history as JSON (carried by an `install_move` or `alias_move` record); nil when there is no profile.
    func history(_ key: String) throws -> JSONValue? {
        guard let profile = try ProfilesTable(db).row(key) else { return nil }
        var natives: [JSONMember] = []
        for native in Self.mergedNatives {
            if let value = profile[native.rawValue] as String? { natives.append(JSONMember(native.rawValue, .string(value))) }
        }
        let attributes = try ProfileAttributesTable(db).allInOrder(key).map { row in
            JSONValue.array([.string(row.name), .string(row.attribute.type), .string(row.attribute.value), .string(row.updatedAt)])
        }
        let events = try EventAggregatesTable(db).all(key).map { event in
            JSONValue.object([
                JSONMember("name", .string(event.name)), JSONMember("count", .number(String(event.count))),
                JSONMember("first", .string(event.first)), JSONMember("last", .string(event.last)),
                JSONMember("label", event.label.map(JSONValue.string) ?? .null),
                JSONMember("tags", event.tags.map(JSONValue.string) ?? .null),
                JSONMember("attributes", .string(event.attributes)),
            ])
        }
        return .object([
            JSONMember("natives", .object(natives)), JSONMember("attributes", .array(attributes)),
            JSONMember("events", .array(events)), JSONMember("purchases", try Purchases(db).history(key)),
        ])
    }

    /// Merges a history into a profile: natives only where the profile has none, attributes where the merged value
    /// is newer, event counts and purchases added.
    func merge(_ key: String, history: JSONValue) throws {
        if case .object(let natives)? = history["natives"] {
            let profiles = ProfilesTable(db)
            for member in natives {
                guard let native = ProfileNative(rawValue: member.key), Self.mergedNatives.contains(native) else { continue }
                try profiles.fillNative(key, native, member.value.stringValue)
            }
        }
        if case .array(let attributes)? = history["attributes"] {
            let table = ProfileAttributesTable(db)
            for case .array(let parts) in attributes where parts.count == 4 {
                guard let name = parts[0].stringValue, let type = parts[1].stringValue,
                    let value = parts[2].stringValue, let time = parts[3].stringValue
                else { continue }
                try table.set(key, name: name, type: type, value: value, time: time, onlyIfNewer: true)
            }
        }
        if case .array(let events)? = history["events"] {
            let table = EventAggregatesTable(db)
            for event in events {
                guard let name = event["name"]?.stringValue, case .number(let count)? = event["count"],
                    let count = Int64(count), let first = event["first"]?.stringValue,
                    let last = event["last"]?.stringValue
                else { continue }
                try table.add(
                    key,
                    EventAggregate(
                        name: name, count: count, first: first, last: last, label: event["label"]?.stringValue,
                        tags: event["tags"]?.stringValue, attributes: event["attributes"]?.stringValue ?? "{}"))
            }
        }
        if let purchases = history["purchases"] { try Purchases(db).merge(key, history: purchases) }
    }
}
