import Foundation
import GRDB
import PartitionStore
import Shared

/// Profile-level writes: the profile's row, natives, custom attributes and array edits, event aggregates.
struct ProfileEdits {
    let db: Database

    init(_ db: Database) { self.db = db }

    func exists(_ key: String) throws -> Bool { try ProfilesTable(db).exists(key) }

    /// Creates the profile's row, or moves its `updated_at`. Returns whether it may be new (its `created_at` is this
    /// write's time): then the fields every profile has from its start (`b.created_at`, `b.timezone` from the project's
    /// default) changed too.
    @discardableResult
    func ensureProfile(_ key: String, project: String, customID: String?, at: Date) throws -> Bool {
        let time = WireTime.format(at)
        return try ProfilesTable(db).ensure(key, project: project, customID: customID, at: time) == time
    }

    /// Deletes a profile and every row keyed by it (attributes, events, installations, push changelog, campaign
    /// decisions); returns whether there was one.
    func delete(_ key: String) throws -> Bool {
        let deleted = try ProfilesTable(db).delete(key)
        try CampaignHistoryTable(db).deleteAll(key: key)
        return deleted
    }

    /// The segment change keys a `profile` object touches (docs/segments.md): `b.<native>`, `email`, `sms`,
    /// `c.<attribute>`.
    static func changeKeys(_ profile: JSONValue) -> Set<ChangeKey> {
        guard case .object(let members) = profile else { return [] }
        var keys: Set<ChangeKey> = []
        for member in members {
            switch member.key {
            case "email", "email_marketing": keys.insert(.namespace(.email))
            case "phone_number", "sms_marketing": keys.insert(.namespace(.sms))
            case "custom_attributes":
                if case .object(let attributes) = member.value {
                    for attribute in attributes { keys.insert(.custom(String(attribute.key.prefix { $0 != "." }))) }
                }
            default: keys.insert(.native(member.key))
            }
        }
        return keys
    }

    /// Applies a `profile` object; returns whether a reachability field changed. `arrayLimits`: the most items an array
    /// attribute keeps where it is not 25 (the project's `array_limits`).
    func applyProfile(_ key: String, profile: JSONValue, at: Date, arrayLimits: [String: Int] = [:]) throws -> Bool {
        guard case .object(let members) = profile else { return false }
        let time = WireTime.format(at)
        let profiles = ProfilesTable(db)
        var reachabilityChanged = false
        for member in members {
            if let native = ProfileNative(rawValue: member.key) {
                let newValue = member.value.stringValue
                guard try profiles.native(key, native) != newValue else { continue }
                try profiles.setNative(key, native, newValue, at: time)
                if native.isReachability { reachabilityChanged = true }
            } else if member.key == "custom_attributes", case .object(let attributes) = member.value {
                for attribute in attributes {
                    try applyAttribute(key, attribute: attribute, time: time, arrayLimits: arrayLimits)
                }
            }
        }
        return reachabilityChanged
    }

    /// `name.t: value` sets, `name: null` removes, `name.a: {"$add", "$remove"}` edits an array (unique items, the
    /// oldest dropped beyond the attribute's limit; a whole array beyond it keeps its first items), `name.i: {"$inc": n}`
    /// adds to an integer (creating it; ignored on another type or past the int64 range).
    private func applyAttribute(_ key: String, attribute: JSONMember, time: String, arrayLimits: [String: Int]) throws {
        let attributes = ProfileAttributesTable(db)
        let parts = attribute.key.split(separator: ".", maxSplits: 1)
        let name = String(parts[0])
        guard parts.count == 2 else {
            try attributes.delete(key, name: name)
            return
        }
        let type = String(parts[1])
        var value = attribute.value
        let limit = arrayLimits[name] ?? ProjectDefinition.defaultArrayLimit
        if case .object = value {
            let stored = try attributes.get(key, name: name)
            if type == "i", case .number(let literal)? = value["$inc"], let amount = Int64(literal) {
                var total = amount
                if let stored {
                    guard stored.type == "i", let current = Int64(stored.value) else { return }
                    let (sum, overflow) = current.addingReportingOverflow(amount)
                    guard !overflow else { return }
                    total = sum
                }
                value = .number(String(total))
            } else if type == "a" {
                // A partial edit of the stored array (a new array if the attribute is absent or of another type).
                var items: [String] = []
                if let stored, stored.type == "a", case .array(let values)? = try? JSONParser.parse(Array(stored.value.utf8)) {
                    items = values.compactMap { if case .string(let text) = $0 { text } else { nil } }
                }
                let adds = Self.strings(value["$add"])
                let removes = Set(Self.strings(value["$remove"]))
                items.removeAll { removes.contains($0) }
                for item in adds where !items.contains(item) { items.append(item) }
                if items.count > limit { items.removeFirst(items.count - limit) }
                value = .array(items.map(JSONValue.string))
            } else {
                return
            }
        } else if type == "a", case .array(let items) = value, items.count > limit {
            value = .array(Array(items.prefix(limit)))
        }
        try attributes.set(key, name: name, type: type, value: String(decoding: value.serialized, as: UTF8.self), time: time)
    }

    private static func strings(_ value: JSONValue?) -> [String] {
        guard case .array(let items)? = value else { return [] }
        return items.compactMap { if case .string(let text) = $0 { text } else { nil } }
    }

    /// Count, first and last time, and the last label, tags and attributes of an event name.
    func applyEvent(_ key: String, event: JSONValue, receivedAt: Date) throws {
        guard case .string(let name)? = event["name"] else { return }
        var at = receivedAt
        if case .string(let text)? = event["time"], let time = WireTime.parse(text) { at = time }
        let time = WireTime.format(at)
        let label = event["label"]?.stringValue
        let tags = event["tags"].map { String(decoding: $0.serialized, as: UTF8.self) }
        let attributes = String(decoding: (event["attributes"] ?? .object([])).serialized, as: UTF8.self)
        try EventAggregatesTable(db).add(
            key, EventAggregate(name: name, count: 1, first: time, last: time, label: label, tags: tags, attributes: attributes))
    }
}
