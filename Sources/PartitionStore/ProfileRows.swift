import Foundation
import GRDB
import Shared

/// Every row a partition database holds of one profile: the rows of each table with a `profile_key` column, read from
/// the schema, so that a table added later is counted and erased without a change here (docs/data-rights.md, "Erase").
package enum ProfileRows {
    /// The tables with a `profile_key` column, by name.
    package static func tables(_ db: Database) throws -> [String] {
        try String.fetchAll(
            db, sql: """
                SELECT m.name FROM sqlite_master m WHERE m.type = 'table'
                    AND EXISTS (SELECT 1 FROM pragma_table_info(m.name) c WHERE c.name = 'profile_key')
                ORDER BY m.name
                """)
    }

    /// Rows per table (those with any).
    package static func count(_ db: Database, key: String) throws -> [String: Int] {
        var counts: [String: Int] = [:]
        for table in try tables(db) {
            let rows = try Int.fetchOne(db, sql: "SELECT count(*) FROM \"\(table)\" WHERE profile_key = ?", arguments: [key]) ?? 0
            if rows > 0 { counts[table] = rows }
        }
        return counts
    }

    /// Deletes the profile's rows from every such table but `keeping`; returns how many went.
    @discardableResult
    package static func delete(_ db: Database, key: String, keeping: Set<String> = []) throws -> Int {
        var deleted = 0
        for table in try tables(db) where !keeping.contains(table) {
            try db.execute(sql: "DELETE FROM \"\(table)\" WHERE profile_key = ?", arguments: [key])
            deleted += db.changesCount
        }
        return deleted
    }
}

extension ProfileRows {
    /// Every row of the profile, table by table in name order, each as a JSON object of its columns (text as text,
    /// numbers as numbers, blobs as their JSON or text when they are, else `{"base64": …}`). Push tokens are masked to
    /// their last 6 characters wherever they stand (a `token` column or key, a push target's address, inside a stored
    /// request) unless `tokens` (docs/data-rights.md, "Export").
    package static func export(_ db: Database, key: String, tokens: Bool) throws -> [(table: String, row: JSONValue)] {
        var rows: [(table: String, row: JSONValue)] = []
        for table in try tables(db) {
            for row in try Row.fetchAll(db, sql: "SELECT * FROM \"\(table)\" WHERE profile_key = ?", arguments: [key]) {
                var members: [JSONMember] = []
                for (column, value) in row {
                    let json: JSONValue = switch value.storage {
                    case .null: .null
                    case .int64(let number): .number(String(number))
                    case .double(let number): number.isFinite ? .number(String(number)) : .string(String(number))
                    case .string(let text): (text.hasPrefix("{") ? try? JSONParser.parse(Array(text.utf8)) : nil) ?? .string(text)
                    case .blob(let data):
                        String(data: data, encoding: .utf8).map { text in (try? JSONParser.parse(Array(text.utf8))) ?? .string(text) }
                            ?? .object([JSONMember("base64", .string(data.base64EncodedString()))])
                    }
                    members.append(JSONMember(column, json))
                }
                rows.append((table, .object(members)))
            }
        }
        guard !tokens else { return rows }
        var found: Set<String> = []
        for (table, row) in rows {
            collectTokens(row, into: &found)
            if table == "ledger", row["channel"] == .string("push"), case .string(let address)? = row["target"]?["address"] {
                found.insert(address)
            }
        }
        return rows.map { ($0.table, masking($0.row, found)) }
    }

    /// The values of every `token` key, at any depth.
    private static func collectTokens(_ value: JSONValue, into found: inout Set<String>) {
        switch value {
        case .object(let members):
            for member in members {
                if member.key == "token", case .string(let token) = member.value, !token.isEmpty { found.insert(token) }
                collectTokens(member.value, into: &found)
            }
        case .array(let items): for item in items { collectTokens(item, into: &found) }
        default: break
        }
    }

    /// `value` with every occurrence of a token in its strings masked.
    private static func masking(_ value: JSONValue, _ tokens: Set<String>) -> JSONValue {
        switch value {
        case .string(var text):
            for token in tokens where text.contains(token) { text = text.replacingOccurrences(of: token, with: mask(token)) }
            return .string(text)
        case .object(let members): return .object(members.map { JSONMember($0.key, masking($0.value, tokens)) })
        case .array(let items): return .array(items.map { masking($0, tokens) })
        default: return value
        }
    }

    /// One exported row: its partition, its profile, its table and its columns.
    package typealias Exported = (partition: Int32, profileKey: String, table: String, row: JSONValue)

    /// Every row of the profiles `keys` finds in each of `partitions`, partition by partition, each running in `owner`
    /// (as work its revocation waits for); nil when one is not: what an instance answers for its partitions, in either
    /// service.
    package static func export(
        _ owner: PartitionOwner, in partitions: [Int32], tokens: Bool, keys: @escaping @Sendable (Database) throws -> [String]
    ) async throws -> [Exported]? {
        try await owner.run(onEach: partitions.sorted()) { database in
            try await database.read { db in
                try keys(db).flatMap { key in try export(db, key: key, tokens: tokens).map { (database.partition, key, $0.table, $0.row) } }
            }
        }?.flatMap { $0 }
    }

    /// `…` and the last 6 characters.
    package static func mask(_ token: String) -> String { token.count > 6 ? "…" + token.suffix(6) : "…" }
}
