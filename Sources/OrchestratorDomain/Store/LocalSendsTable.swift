import Foundation
import GRDB
import PartitionStore
import Shared

/// One row of `local_sends`: members of a local-time run whose time comes at one instant, from one prepared page.
struct LocalSendsRow {
    /// The row's first member (its name within the instant).
    var firstKey: String
    var occurrence: String
    /// The members still to release, in key order.
    var keys: [String]
}

/// `local_sends`: the members of a local-time schedule's run by the instant their local time comes (docs/campaigns.md):
/// a row per prepared page and instant, holding the members still to release (a JSON array of profile keys: a key may
/// hold any character a custom ID may).
struct LocalSendsTable {
    let db: Database

    init(_ db: Database) { self.db = db }

    /// Adds a page's members at an instant; false when this page's row was there (a page prepared again).
    func insert(campaign: String, instant: Date, occurrence: String, keys: ArraySlice<String>) throws -> Bool {
        guard let first = keys.first else { return false }
        try db.executeCached(
            sql: """
                INSERT OR IGNORE INTO local_sends (campaign_key, due_at, first_key, occurrence, profile_keys)
                VALUES (?, ?, ?, ?, ?)
                """,
            arguments: [campaign, WireTime.format(instant), first, occurrence, Self.keyList(keys)])
        return db.changesCount > 0
    }

    /// Up to `limit` rows of an instant, in order.
    func rows(campaign: String, instant: Date, limit: Int) throws -> [LocalSendsRow] {
        try Row.fetchAll(
            db.cachedStatement(sql: """
                SELECT first_key, occurrence, profile_keys FROM local_sends WHERE campaign_key = ? AND due_at = ?
                ORDER BY first_key LIMIT ?
                """),
            arguments: [campaign, WireTime.format(instant), limit]
        ).map { LocalSendsRow(firstKey: $0["first_key"], occurrence: $0["occurrence"], keys: Self.keys($0["profile_keys"])) }
    }

    func delete(campaign: String, instant: Date, firstKey: String) throws {
        try db.executeCached(
            sql: "DELETE FROM local_sends WHERE campaign_key = ? AND due_at = ? AND first_key = ?",
            arguments: [campaign, WireTime.format(instant), firstKey])
    }

    /// The row keeps only `keys` (the others were released).
    func keep(campaign: String, instant: Date, firstKey: String, keys: ArraySlice<String>) throws {
        try db.executeCached(
            sql: "UPDATE local_sends SET profile_keys = ? WHERE campaign_key = ? AND due_at = ? AND first_key = ?",
            arguments: [Self.keyList(keys), campaign, WireTime.format(instant), firstKey])
    }

    /// The ref of the timer that releases an instant's members: `<campaign> <instant>`.
    static func releaseRef(campaign: String, instant: Date) -> String { "\(campaign) \(wire: instant)" }

    /// The campaign and instant a release timer's ref names; nil for a ref that names none.
    static func release(ref: String) -> (campaign: String, instant: Date)? {
        guard let space = ref.lastIndex(of: " "), let instant = WireTime.parse(String(ref[ref.index(after: space)...]))
        else { return nil }
        return (String(ref[..<space]), instant)
    }

    static func keyList(_ keys: ArraySlice<String>) -> String {
        String(decoding: JSONValue.array(keys.map(JSONValue.string)).serialized, as: UTF8.self)
    }

    static func keys(_ text: String) -> [String] {
        guard case .array(let items)? = try? JSONParser.parse(Array(text.utf8)) else { return [] }
        return items.compactMap(\.stringValue)
    }
}
