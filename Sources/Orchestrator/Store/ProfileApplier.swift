import Foundation
import GRDB
import Shared

/// Applies `herald.ingest` records to a partition's database, inside the batch's transaction.
///
/// This version applies profile updates (natives, custom attributes, array edits), events (aggregates) and profile
/// deletion, and produces a `herald.contacts` snapshot when a profile's reachability changes. The ops of the identity
/// and installation model (identify, logout, installation, push_token, location, opt_out, opt_in, wipe) and
/// `herald.deliveries` records are kept whole in `deferred_records`, to be applied by the version that implements
/// them: never skipped. A record that cannot be read goes to `herald.dlq` with the reason.
enum ProfileApplier {
    /// The most items a string array keeps; an `$add` beyond it drops the oldest items.
    static let maxArrayItems = Limits.stringArrayItems

    static func apply(_ db: Database, record: KafkaRecord) throws -> [PendingOutput] {
        guard record.topic == HeraldTopic.ingest.name else {
            try defer_(db, record, op: nil)
            return []
        }
        guard let bytes = record.value else {
            return [deadLetter(record, reason: "a null value on herald.ingest")]
        }
        let value: JSONValue
        do {
            value = try JSONParser.parse(bytes)
        } catch {
            return [deadLetter(record, reason: "not JSON: \(error)")]
        }
        guard case .string("ingest")? = value["kind"], case .number("1")? = value["v"] else {
            return [deadLetter(record, reason: "not an ingest record of format version 1")]
        }
        guard case .string(let opName)? = value["op"], let op = IngestOp(rawValue: opName),
            case .string(let project)? = value["project"], case .string(let id)? = value["id"],
            case .string(let receivedText)? = value["received_at"], let receivedAt = WireTime.parse(receivedText)
        else {
            return [deadLetter(record, reason: "missing op, project, id or received_at")]
        }
        switch op {
        case .identify, .logout, .installation, .pushToken, .location, .optOut, .optIn, .wipe:
            // Kept whole for the version that applies them; their ids are not marked applied, so that it can.
            try defer_(db, record, op: op.rawValue)
            return []
        case .profileUpdate, .event, .profileDelete:
            break
        }
        // A replay of a record id is a no-op.
        try Self.run(
            db, sql: "INSERT OR IGNORE INTO applied_records (project, record_id, applied_at) VALUES (?, ?, ?)",
            arguments: [project, id, WireTime.format(Date())])
        guard db.changesCount == 1 else { return [] }

        let key = record.keyString ?? ""
        var customID: String?
        if case .string(let text)? = value["custom_id"] { customID = text }
        switch op {
        case .profileUpdate:
            try ensureProfile(db, key: key, project: project, customID: customID, at: receivedAt)
            var reachabilityChanged = false
            if let profile = value["profile"] {
                reachabilityChanged = try applyProfile(db, key: key, profile: profile, at: receivedAt)
            }
            if case .array(let events)? = value["events"] {
                for event in events { try applyEvent(db, key: key, event: event, receivedAt: receivedAt) }
            }
            return reachabilityChanged ? [try contactSnapshot(db, key: key)] : []
        case .event:
            try ensureProfile(db, key: key, project: project, customID: customID, at: receivedAt)
            if let event = value["event"] { try applyEvent(db, key: key, event: event, receivedAt: receivedAt) }
            return []
        case .profileDelete:
            try Self.run(db, sql: "DELETE FROM profiles WHERE profile_key = ?", arguments: [key])
            return [PendingOutput(topic: HeraldTopic.contacts.name, key: key, value: nil)]
        case .identify, .logout, .installation, .pushToken, .location, .optOut, .optIn, .wipe:
            return []  // deferred above
        }
    }

    /// Runs `sql` through GRDB's statement cache: each statement is compiled once per connection.
    private static func run(_ db: Database, sql: String, arguments: StatementArguments = StatementArguments()) throws {
        try db.cachedStatement(sql: sql).execute(arguments: arguments)
    }

    private static func defer_(_ db: Database, _ record: KafkaRecord, op: String?) throws {
        try Self.run(
            db, sql: "INSERT OR REPLACE INTO deferred_records (topic, offset, key, value, op) VALUES (?, ?, ?, ?, ?)",
            arguments: [record.topic, record.offset, record.keyString, record.value.map { Data($0) }, op])
    }

    static func deadLetter(_ record: KafkaRecord, reason: String) -> PendingOutput {
        let letter = DeadLetter(service: "orchestrator", reason: reason, record: record, at: Date())
        return PendingOutput(
            topic: HeraldTopic.dlq.name, key: record.keyString ?? "", value: (try? Wire.encode(letter)) ?? [])
    }

    private static func ensureProfile(_ db: Database, key: String, project: String, customID: String?, at: Date) throws {
        let time = WireTime.format(at)
        try Self.run(
            db, sql: """
                INSERT INTO profiles (profile_key, project, custom_id, created_at, updated_at) VALUES (?, ?, ?, ?, ?)
                ON CONFLICT (profile_key) DO UPDATE SET updated_at = max(updated_at, excluded.updated_at)
                """, arguments: [key, project, customID, time, time])
    }

    static let nativeColumns: [String: String] = [
        "email": "email", "email_marketing": "email_marketing", "phone_number": "phone_number",
        "sms_marketing": "sms_marketing", "language": "language", "region": "region", "timezone": "timezone",
    ]
    static let reachabilityColumns: Set<String> = ["email", "email_marketing", "phone_number", "sms_marketing"]

    /// Applies a `profile` object; returns whether a reachability field changed.
    private static func applyProfile(_ db: Database, key: String, profile: JSONValue, at: Date) throws -> Bool {
        guard case .object(let members) = profile else { return false }
        let time = WireTime.format(at)
        var reachabilityChanged = false
        for member in members {
            if let column = nativeColumns[member.key] {
                let newValue: String? = if case .string(let text) = member.value { text } else { nil }
                let old = try String.fetchOne(
                    db.cachedStatement(sql: "SELECT \(column) FROM profiles WHERE profile_key = ?"), arguments: [key])
                guard old != newValue else { continue }
                var sql = "UPDATE profiles SET \(column) = ?"
                if column == "email_marketing" || column == "sms_marketing" { sql += ", \(column)_changed_at = ?" }
                sql += " WHERE profile_key = ?"
                let arguments: StatementArguments =
                    column.hasSuffix("_marketing") ? [newValue, time, key] : [newValue, key]
                try Self.run(db, sql: sql, arguments: arguments)
                if reachabilityColumns.contains(column) { reachabilityChanged = true }
            } else if member.key == "custom_attributes", case .object(let attributes) = member.value {
                for attribute in attributes { try applyAttribute(db, key: key, attribute: attribute, time: time) }
            }
        }
        return reachabilityChanged
    }

    /// `name.t: value` sets, `name: null` removes, `name.a: {"$add", "$remove"}` edits an array.
    private static func applyAttribute(_ db: Database, key: String, attribute: JSONMember, time: String) throws {
        let parts = attribute.key.split(separator: ".", maxSplits: 1)
        let name = String(parts[0])
        guard parts.count == 2 else {
            try Self.run(db, sql: "DELETE FROM profile_attributes WHERE profile_key = ? AND name = ?", arguments: [key, name])
            return
        }
        let type = String(parts[1])
        var value = attribute.value
        if type == "a", case .object = value {
            // A partial edit of the stored array (a new array if the attribute is absent or of another type).
            let stored = try Row.fetchOne(
                db.cachedStatement(sql: "SELECT type, value FROM profile_attributes WHERE profile_key = ? AND name = ?"),
                arguments: [key, name])
            var items: [String] = []
            if let stored, stored["type"] as String == "a", case .array(let values)? = try? JSONParser.parse(Array((stored["value"] as String).utf8)) {
                items = values.compactMap { if case .string(let text) = $0 { text } else { nil } }
            }
            let adds = strings(value["$add"])
            let removes = Set(strings(value["$remove"]))
            items.removeAll { removes.contains($0) }
            for item in adds where !items.contains(item) { items.append(item) }
            if items.count > maxArrayItems { items.removeFirst(items.count - maxArrayItems) }
            value = .array(items.map(JSONValue.string))
        }
        try Self.run(
            db, sql: """
                INSERT INTO profile_attributes (profile_key, name, type, value, updated_at) VALUES (?, ?, ?, ?, ?)
                ON CONFLICT (profile_key, name) DO UPDATE SET type = excluded.type, value = excluded.value,
                    updated_at = excluded.updated_at
                """, arguments: [key, name, type, String(decoding: value.serialized, as: UTF8.self), time])
    }

    private static func strings(_ value: JSONValue?) -> [String] {
        guard case .array(let items)? = value else { return [] }
        return items.compactMap { if case .string(let text) = $0 { text } else { nil } }
    }

    /// Count, first and last time, and the last label, tags and attributes of an event name.
    private static func applyEvent(_ db: Database, key: String, event: JSONValue, receivedAt: Date) throws {
        guard case .string(let name)? = event["name"] else { return }
        var at = receivedAt
        if case .string(let text)? = event["time"], let time = WireTime.parse(text) { at = time }
        let time = WireTime.format(at)
        let label: String? = if case .string(let text)? = event["label"] { text } else { nil }
        let tags = event["tags"].map { String(decoding: $0.serialized, as: UTF8.self) }
        let attributes = String(decoding: (event["attributes"] ?? .object([])).serialized, as: UTF8.self)
        // "Last" values follow the event time, so that a late, older event does not overwrite newer ones.
        try Self.run(
            db, sql: """
                INSERT INTO event_aggregates (profile_key, name, count, first_at, last_at, last_label, last_tags,
                    last_attributes)
                VALUES (?, ?, 1, ?, ?, ?, ?, ?)
                ON CONFLICT (profile_key, name) DO UPDATE SET
                    count = count + 1,
                    first_at = min(first_at, excluded.first_at),
                    last_label = CASE WHEN excluded.last_at >= last_at THEN excluded.last_label ELSE last_label END,
                    last_tags = CASE WHEN excluded.last_at >= last_at THEN excluded.last_tags ELSE last_tags END,
                    last_attributes = CASE WHEN excluded.last_at >= last_at THEN excluded.last_attributes
                        ELSE last_attributes END,
                    last_at = max(last_at, excluded.last_at)
                """, arguments: [key, name, time, time, label, tags, attributes])
    }

    /// The notifier's view of a profile's reachability (`herald.contacts`, compacted, keyed by profile).
    static func contactSnapshot(_ db: Database, key: String) throws -> PendingOutput {
        guard let row = try Row.fetchOne(db, sql: "SELECT * FROM profiles WHERE profile_key = ?", arguments: [key]) else {
            return PendingOutput(topic: HeraldTopic.contacts.name, key: key, value: nil)
        }
        let snapshot = JSONValue.object([
            JSONMember("v", .number("1")), JSONMember("kind", .string("contact")),
            JSONMember("project", ProfileView.text(row, "project")),
            JSONMember("custom_id", ProfileView.text(row, "custom_id")),
            JSONMember("email", ProfileView.email(row)), JSONMember("sms", ProfileView.sms(row)),
            JSONMember("updated_at", ProfileView.text(row, "updated_at")),
        ])
        return PendingOutput(topic: HeraldTopic.contacts.name, key: key, value: snapshot.serialized)
    }
}
