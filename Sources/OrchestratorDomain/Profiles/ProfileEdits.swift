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
        try ProfilesTable(db).ensure(key, project: project, customID: customID, at: at)
    }

    /// Deletes a profile and every row keyed by it (attributes, events, installations, push changelog, campaign
    /// decisions); returns whether there was one.
    func delete(_ key: String) throws -> Bool {
        let deleted = try ProfilesTable(db).delete(key)
        try CampaignHistoryTable(db).deleteAll(key: key)
        return deleted
    }

    /// The segment change keys an edit touches (docs/segments.md): `b.<native>`, `email`, `sms`, `c.<attribute>`.
    static func changeKeys(_ edit: ProfileEdit) -> Set<ChangeKey> {
        var keys: Set<ChangeKey> = []
        for native in edit.natives {
            switch native.key {
            case "email", "email_marketing": keys.insert(.namespace(.email))
            case "phone_number", "sms_marketing": keys.insert(.namespace(.sms))
            default: keys.insert(.native(native.key))
            }
        }
        for attribute in edit.attributes { keys.insert(.custom(attribute.name)) }
        return keys
    }

    /// Applies an edit; returns whether a reachability field changed. `arrayLimits`: the most items an array attribute
    /// keeps where it is not 25 (the project's `array_limits`).
    func applyProfile(_ key: String, _ edit: ProfileEdit, at: Date, arrayLimits: [String: Int] = [:]) throws -> Bool {
        let profiles = ProfilesTable(db)
        var reachabilityChanged = false
        for member in edit.natives {
            guard let native = ProfileNative(rawValue: member.key) else { continue }
            let newValue = member.value.stringValue
            guard try profiles.native(key, native) != newValue else { continue }
            try profiles.setNative(key, native, newValue, at: at)
            if native.isReachability { reachabilityChanged = true }
        }
        for (name, edit) in edit.attributes {
            try applyAttribute(key, name: name, edit, time: at, limit: arrayLimits[name] ?? ProjectDefinition.defaultArrayLimit)
        }
        return reachabilityChanged
    }

    /// Sets, removes, increments (creating it; ignored on another type or past the int64 range) or edits an array
    /// (unique items, the oldest dropped beyond the attribute's limit; a whole array beyond it keeps its first items).
    private func applyAttribute(_ key: String, name: String, _ edit: AttributeEdit, time: Date, limit: Int) throws {
        let attributes = ProfileAttributesTable(db)
        let value: AttributeValue
        switch edit {
        case .remove:
            return try attributes.delete(key, name: name)
        case .set(.stringArray(let items)) where items.count > limit:
            value = .stringArray(Array(items.prefix(limit)))
        case .set(let set):
            value = set
        case .increment(let amount):
            var total = amount
            if let stored = try attributes.get(key, name: name) {
                guard stored.type == .integer, let current = Int64(stored.value) else { return }
                let (sum, overflow) = current.addingReportingOverflow(amount)
                guard !overflow else { return }
                total = sum
            }
            value = .integer(total)
        case .arrayEdit(let adds, let removes):
            // A partial edit of the stored array (a new array if the attribute is absent or of another type).
            var items: [String] = []
            if let stored = try attributes.get(key, name: name), stored.type == .array,
                case .array(let values)? = try? JSONParser.parse(Array(stored.value.utf8))
            {
                items = values.compactMap { if case .string(let text) = $0 { text } else { nil } }
            }
            let removed = Set(removes)
            items.removeAll { removed.contains($0) }
            for item in adds where !items.contains(item) { items.append(item) }
            if items.count > limit { items.removeFirst(items.count - limit) }
            value = .stringArray(items)
        }
        try attributes.set(
            key, name: name, type: value.type, value: String(decoding: value.json.serialized, as: UTF8.self), time: time)
    }

    /// Count, first and last time, and the last label, tags and attributes of an event name; returns the event's typed
    /// attributes as stored (for its triggers).
    @discardableResult
    func applyEvent(_ key: String, _ event: ValidatedEvent, receivedAt: Date) throws -> JSONValue {
        let time = event.time ?? receivedAt
        let tags = event.tags.map { String(decoding: JSONValue.array($0.map(JSONValue.string)).serialized, as: UTF8.self) }
        let attributes = event.attributesJSON
        try EventAggregatesTable(db).add(
            key,
            EventAggregate(
                name: event.name, count: 1, first: time, last: time, label: event.label, tags: tags,
                attributes: String(decoding: attributes.serialized, as: UTF8.self)))
        return attributes
    }
}
