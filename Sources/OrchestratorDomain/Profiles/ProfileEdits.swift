import Foundation
import GRDB
import PartitionStore
import Shared

/// Profile-level writes: natives, custom attributes, array edits, event aggregates, and the merge of anonymous history.
enum ProfileEdits {
    static func exists(_ db: Database, key: String) throws -> Bool {
        try Bool.fetchOne(
            db.cachedStatement(sql: "SELECT 1 FROM profiles WHERE profile_key = ?"), arguments: [key]) ?? false
    }

    /// Creates the profile's row, or moves its `updated_at`. Returns whether it may be new (its `created_at` is this
    /// write's time): then the fields every profile has from its start (`b.created_at`, `b.timezone` from the project's
    /// default) changed too.
    @discardableResult
    static func ensureProfile(_ db: Database, key: String, project: String, customID: String?, at: Date) throws -> Bool {
        let time = WireTime.format(at)
        let created = try String.fetchOne(
            db.cachedStatement(
                sql: """
                    INSERT INTO profiles (profile_key, project, custom_id, created_at, updated_at) VALUES (?, ?, ?, ?, ?)
                    ON CONFLICT (profile_key) DO UPDATE SET updated_at = max(updated_at, excluded.updated_at)
                    RETURNING created_at
                    """), arguments: [key, project, customID, time, time])
        return created == time
    }

    /// Deletes a profile and every row keyed by it (attributes, events, installations, push changelog, campaign
    /// decisions).
    static func delete(_ db: Database, key: String) throws -> Bool {
        try db.executeCached(sql: "DELETE FROM profiles WHERE profile_key = ?", arguments: [key])
        let deleted = db.changesCount > 0
        try db.executeCached(sql: "DELETE FROM campaign_history WHERE profile_key = ?", arguments: [key])
        return deleted
    }

    static let nativeColumns: [String: String] = [
        "email": "email", "email_marketing": "email_marketing", "phone_number": "phone_number",
        "sms_marketing": "sms_marketing", "language": "language", "region": "region", "timezone": "timezone",
    ]
    static let reachabilityColumns: Set<String> = ["email", "email_marketing", "phone_number", "sms_marketing"]

    /// The segment change keys a `profile` object touches (docs/segments.md): `b.<native>`, `email`, `sms`,
    /// `c.<attribute>`.
    static func changeKeys(_ profile: JSONValue) -> Set<String> {
        guard case .object(let members) = profile else { return [] }
        var keys: Set<String> = []
        for member in members {
            switch member.key {
            case "email", "email_marketing": keys.insert("email")
            case "phone_number", "sms_marketing": keys.insert("sms")
            case "custom_attributes":
                if case .object(let attributes) = member.value {
                    for attribute in attributes { keys.insert("c.\(attribute.key.prefix { $0 != "." })") }
                }
            default: keys.insert("b.\(member.key)")
            }
        }
        return keys
    }

    /// Applies a `profile` object; returns whether a reachability field changed. `arrayLimits`: the most items an array
    /// attribute keeps where it is not 25 (the project's `array_limits`).
    static func applyProfile(
        _ db: Database, key: String, profile: JSONValue, at: Date, arrayLimits: [String: Int] = [:]
    ) throws -> Bool {
        guard case .object(let members) = profile else { return false }
        let time = WireTime.format(at)
        var reachabilityChanged = false
        for member in members {
            if let column = nativeColumns[member.key] {
                let newValue = member.value.stringValue
                let old = try String.fetchOne(
                    db.cachedStatement(sql: "SELECT \(column) FROM profiles WHERE profile_key = ?"), arguments: [key])
                guard old != newValue else { continue }
                var sql = "UPDATE profiles SET \(column) = ?"
                if column == "email_marketing" || column == "sms_marketing" { sql += ", \(column)_changed_at = ?" }
                // A new address has not bounced (yet).
                if column == "email" { sql += ", email_bounced_at = NULL" }
                sql += " WHERE profile_key = ?"
                let arguments: StatementArguments =
                    column.hasSuffix("_marketing") ? [newValue, time, key] : [newValue, key]
                try db.executeCached(sql: sql, arguments: arguments)
                if reachabilityColumns.contains(column) { reachabilityChanged = true }
            } else if member.key == "custom_attributes", case .object(let attributes) = member.value {
                for attribute in attributes {
                    try applyAttribute(db, key: key, attribute: attribute, time: time, arrayLimits: arrayLimits)
                }
            }
        }
        return reachabilityChanged
    }

    /// `name.t: value` sets, `name: null` removes, `name.a: {"$add", "$remove"}` edits an array (unique items, the
    /// oldest dropped beyond the attribute's limit; a whole array beyond it keeps its first items), `name.i: {"$inc": n}`
    /// adds to an integer (creating it; ignored on another type or past the int64 range).
    private static func applyAttribute(
        _ db: Database, key: String, attribute: JSONMember, time: String, arrayLimits: [String: Int]
    ) throws {
        let parts = attribute.key.split(separator: ".", maxSplits: 1)
        let name = String(parts[0])
        guard parts.count == 2 else {
            try db.executeCached(sql: "DELETE FROM profile_attributes WHERE profile_key = ? AND name = ?", arguments: [key, name])
            return
        }
        let type = String(parts[1])
        var value = attribute.value
        let limit = arrayLimits[name] ?? ProjectDefinition.defaultArrayLimit
        if case .object = value {
            let stored = try Row.fetchOne(
                db.cachedStatement(sql: "SELECT type, value FROM profile_attributes WHERE profile_key = ? AND name = ?"),
                arguments: [key, name])
            if type == "i", case .number(let literal)? = value["$inc"], let amount = Int64(literal) {
                var total = amount
                if let stored {
                    guard stored["type"] as String == "i", let current = Int64(stored["value"] as String) else { return }
                    let (sum, overflow) = current.addingReportingOverflow(amount)
                    guard !overflow else { return }
                    total = sum
                }
                value = .number(String(total))
            } else if type == "a" {
                // A partial edit of the stored array (a new array if the attribute is absent or of another type).
                var items: [String] = []
                if let stored, stored["type"] as String == "a",
                    case .array(let values)? = try? JSONParser.parse(Array((stored["value"] as String).utf8))
                {
                    items = values.compactMap { if case .string(let text) = $0 { text } else { nil } }
                }
                let adds = strings(value["$add"])
                let removes = Set(strings(value["$remove"]))
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
        try setAttribute(db, key: key, name: name, type: type, value: String(decoding: value.serialized, as: UTF8.self), time: time)
    }

    /// Sets an attribute; with `onlyIfNewer`, only when `time` is later than the stored value's (a merge).
    static func setAttribute(
        _ db: Database, key: String, name: String, type: String, value: String, time: String, onlyIfNewer: Bool = false
    ) throws {
        try db.executeCached(sql: """
                INSERT INTO profile_attributes (profile_key, name, type, value, updated_at) VALUES (?, ?, ?, ?, ?)
                ON CONFLICT (profile_key, name) DO UPDATE SET type = excluded.type, value = excluded.value,
                    updated_at = excluded.updated_at
                """ + (onlyIfNewer ? " WHERE excluded.updated_at > profile_attributes.updated_at" : ""),
            arguments: [key, name, type, value, time])
    }

    private static func strings(_ value: JSONValue?) -> [String] {
        guard case .array(let items)? = value else { return [] }
        return items.compactMap { if case .string(let text) = $0 { text } else { nil } }
    }

    /// Count, first and last time, and the last label, tags and attributes of an event name.
    static func applyEvent(_ db: Database, key: String, event: JSONValue, receivedAt: Date) throws {
        guard case .string(let name)? = event["name"] else { return }
        var at = receivedAt
        if case .string(let text)? = event["time"], let time = WireTime.parse(text) { at = time }
        let time = WireTime.format(at)
        let label = event["label"]?.stringValue
        let tags = event["tags"].map { String(decoding: $0.serialized, as: UTF8.self) }
        let attributes = String(decoding: (event["attributes"] ?? .object([])).serialized, as: UTF8.self)
        try addAggregate(
            db, key: key,
            EventAggregate(name: name, count: 1, first: time, last: time, label: label, tags: tags, attributes: attributes))
    }

    struct EventAggregate {
        var name: String
        var count: Int64
        var first: String
        var last: String
        var label: String?
        var tags: String?
        var attributes: String
    }

    /// Adds an aggregate (one event, or a merged profile's whole history) to the profile's. "Last" values follow the
    /// event time, so that a late, older event does not overwrite newer ones.
    static func addAggregate(_ db: Database, key: String, _ aggregate: EventAggregate) throws {
        try db.executeCached(sql: """
                INSERT INTO event_aggregates (profile_key, name, count, first_at, last_at, last_label, last_tags,
                    last_attributes)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                ON CONFLICT (profile_key, name) DO UPDATE SET
                    count = count + excluded.count,
                    first_at = min(first_at, excluded.first_at),
                    last_label = CASE WHEN excluded.last_at >= last_at THEN excluded.last_label ELSE last_label END,
                    last_tags = CASE WHEN excluded.last_at >= last_at THEN excluded.last_tags ELSE last_tags END,
                    last_attributes = CASE WHEN excluded.last_at >= last_at THEN excluded.last_attributes
                        ELSE last_attributes END,
                    last_at = max(last_at, excluded.last_at)
                """,
            arguments: [
                key, aggregate.name, aggregate.count, aggregate.first, aggregate.last, aggregate.label, aggregate.tags,
                aggregate.attributes,
            ])
    }

    // MARK: Anonymous history

    /// What an anonymous profile carries to the profile it merges into: language, region and timezone, custom
    /// attributes (with their times) and event aggregates.
    static func history(_ db: Database, key: String) throws -> JSONValue? {
        guard let profile = try Row.fetchOne(db, sql: "SELECT * FROM profiles WHERE profile_key = ?", arguments: [key])
        else { return nil }
        var natives: [JSONMember] = []
        for column in mergedNatives {
            if let value = profile[column] as String? { natives.append(JSONMember(column, .string(value))) }
        }
        let attributes = try Row.fetchAll(
            db, sql: "SELECT name, type, value, updated_at FROM profile_attributes WHERE profile_key = ? ORDER BY name",
            arguments: [key]
        ).map { row in
            JSONValue.array([.string(row["name"]), .string(row["type"]), .string(row["value"]), .string(row["updated_at"])])
        }
        let events = try Row.fetchAll(
            db, sql: "SELECT * FROM event_aggregates WHERE profile_key = ? ORDER BY name", arguments: [key]
        ).map { row in
            JSONValue.object([
                JSONMember("name", .string(row["name"])), JSONMember("count", .number(String(row["count"] as Int64))),
                JSONMember("first", .string(row["first_at"])), JSONMember("last", .string(row["last_at"])),
                JSONMember("label", (row["last_label"] as String?).map(JSONValue.string) ?? .null),
                JSONMember("tags", (row["last_tags"] as String?).map(JSONValue.string) ?? .null),
                JSONMember("attributes", .string(row["last_attributes"])),
            ])
        }
        return .object([
            JSONMember("natives", .object(natives)), JSONMember("attributes", .array(attributes)),
            JSONMember("events", .array(events)), JSONMember("purchases", try Purchases.history(db, key: key)),
        ])
    }

    /// The natives an anonymous or alias-only profile hands on, each only where the profile has none (an alias-only
    /// profile may have an address: Braze's server API sets them).
    static let mergedNatives = ["language", "region", "timezone", "email", "phone_number"]

    /// Merges anonymous history into a profile: natives only where the profile has none, attributes where the
    /// anonymous value is newer, event counts and purchases added.
    static func merge(_ db: Database, key: String, history: JSONValue) throws {
        if case .object(let natives)? = history["natives"] {
            for native in natives where mergedNatives.contains(native.key) {
                try db.executeCached(sql: "UPDATE profiles SET \(native.key) = coalesce(\(native.key), ?) WHERE profile_key = ?",
                    arguments: [native.value.stringValue, key])
            }
        }
        if case .array(let attributes)? = history["attributes"] {
            for case .array(let parts) in attributes where parts.count == 4 {
                guard let name = parts[0].stringValue, let type = parts[1].stringValue,
                    let value = parts[2].stringValue, let time = parts[3].stringValue
                else { continue }
                try setAttribute(db, key: key, name: name, type: type, value: value, time: time, onlyIfNewer: true)
            }
        }
        if case .array(let events)? = history["events"] {
            for event in events {
                guard let name = event["name"]?.stringValue, case .number(let count)? = event["count"],
                    let count = Int64(count), let first = event["first"]?.stringValue,
                    let last = event["last"]?.stringValue
                else { continue }
                try addAggregate(
                    db, key: key,
                    EventAggregate(
                        name: name, count: count, first: first, last: last, label: event["label"]?.stringValue,
                        tags: event["tags"]?.stringValue, attributes: event["attributes"]?.stringValue ?? "{}"))
            }
        }
        if let purchases = history["purchases"] { try Purchases.merge(db, key: key, history: purchases) }
    }
}
