import Foundation
import GRDB

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
