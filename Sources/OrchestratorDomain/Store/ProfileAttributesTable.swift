import Foundation
import GRDB
import PartitionStore
import Shared

/// A custom attribute as stored: its type and its value as JSON text.
struct StoredAttribute {
    var type: AttributeType
    var value: String

    init(type: AttributeType, value: String) {
        self.type = type
        self.value = value
    }

    /// A row's columns; a type this code does not know is an error, not a guess.
    init(column type: String, value: String) throws {
        guard let known = AttributeType(rawValue: type) else {
            throw DatabaseError(message: "profile_attributes.type: unknown attribute type \(type)")
        }
        self.init(type: known, value: value)
    }
}

/// `profile_attributes`: a profile's custom attributes, one row per name, with the time each was last set.
struct ProfileAttributesTable {
    let db: Database

    init(_ db: Database) { self.db = db }

    func get(_ key: String, name: String) throws -> StoredAttribute? {
        try Row.fetchOne(
            db.cachedStatement(sql: "SELECT type, value FROM profile_attributes WHERE profile_key = ? AND name = ?"),
            arguments: [key, name]
        ).map { try StoredAttribute(column: $0["type"], value: $0["value"]) }
    }

    /// Sets an attribute; with `onlyIfNewer`, only when `time` is later than the stored value's (a merge).
    func set(_ key: String, name: String, type: AttributeType, value: String, time: Date, onlyIfNewer: Bool = false) throws {
        try db.executeCached(sql: """
                INSERT INTO profile_attributes (profile_key, name, type, value, updated_at) VALUES (?, ?, ?, ?, ?)
                ON CONFLICT (profile_key, name) DO UPDATE SET type = excluded.type, value = excluded.value,
                    updated_at = excluded.updated_at
                """ + (onlyIfNewer ? " WHERE excluded.updated_at > profile_attributes.updated_at" : ""),
            arguments: [key, name, type.rawValue, value, WireTime.format(time)])
    }

    /// How many attributes the profile has.
    func count(_ key: String) throws -> Int {
        try Int.fetchOne(db.cachedStatement(sql: "SELECT count(*) FROM profile_attributes WHERE profile_key = ?"), arguments: [key]) ?? 0
    }

    func has(_ key: String, name: String) throws -> Bool {
        try Bool.fetchOne(
            db.cachedStatement(sql: "SELECT EXISTS (SELECT 1 FROM profile_attributes WHERE profile_key = ? AND name = ?)"),
            arguments: [key, name]) ?? false
    }

    func delete(_ key: String, name: String) throws {
        try db.executeCached(sql: "DELETE FROM profile_attributes WHERE profile_key = ? AND name = ?", arguments: [key, name])
    }

    /// Every attribute of a profile, by name.
    func all(_ key: String) throws -> [String: StoredAttribute] {
        var attributes: [String: StoredAttribute] = [:]
        for row in try Row.fetchAll(
            db.cachedStatement(sql: "SELECT name, type, value FROM profile_attributes WHERE profile_key = ?"), arguments: [key])
        {
            attributes[row["name"]] = try StoredAttribute(column: row["type"], value: row["value"])
        }
        return attributes
    }

    /// Every attribute of a profile with the time it was set, in name order.
    func allInOrder(_ key: String) throws -> [(name: String, attribute: StoredAttribute, updatedAt: Date)] {
        try Row.fetchAll(
            db.cachedStatement(
                sql: "SELECT name, type, value, updated_at FROM profile_attributes WHERE profile_key = ? ORDER BY name"),
            arguments: [key]
        ).map { ($0["name"], try StoredAttribute(column: $0["type"], value: $0["value"]), try $0.requiredTime("updated_at")) }
    }

    /// The attributes of the profiles `first`…`last` (a backfill's range scan): profile key → name → attribute.
    func all(from first: String, through last: String) throws -> [String: [String: StoredAttribute]] {
        var attributes: [String: [String: StoredAttribute]] = [:]
        for row in try Row.fetchAll(
            db.cachedStatement(
                sql: "SELECT profile_key, name, type, value FROM profile_attributes WHERE profile_key BETWEEN ? AND ?"),
            arguments: [first, last])
        {
            attributes[row[0], default: [:]][row[1]] = try StoredAttribute(column: row[2], value: row[3])
        }
        return attributes
    }
}
