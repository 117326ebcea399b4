import Foundation
import GRDB

/// Every place a partition database holds `needle`: `table.column` for each text or blob cell that contains it (a
/// profile key, a custom ID, an address), the generic stores (offsets, the changelog's own bookkeeping) included. What
/// an erasure must leave empty (docs/data-rights.md).
package func storeHoldings(_ db: Database, _ needle: String) throws -> [String] {
    var found: [String] = []
    let tables = try String.fetchAll(db, sql: "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name")
    for table in tables {
        for column in try String.fetchAll(db, sql: "SELECT name FROM pragma_table_info(?)", arguments: [table]) {
            let rows = try Int.fetchOne(
                db, sql: "SELECT count(*) FROM \"\(table)\" WHERE instr(CAST(\"\(column)\" AS TEXT), ?) > 0", arguments: [needle]) ?? 0
            if rows > 0 { found.append("\(table).\(column) (\(rows))") }
        }
    }
    return found
}

/// The query plan of `sql` (with `arguments`) as SQLite gives it, one detail per step.
package func queryPlan(_ db: Database, _ sql: String, _ arguments: StatementArguments = []) throws -> [String] {
    try Row.fetchAll(db, sql: "EXPLAIN QUERY PLAN " + sql, arguments: arguments).map { $0["detail"] as String? ?? "" }
}

/// The tables with a `profile_key` column whose rows of one profile SQLite finds only by reading the whole table: an
/// export or an erasure of one person would take time in proportion to everyone's rows (docs/data-rights.md).
package func tablesScannedForOneProfile(_ db: Database) throws -> [String] {
    let tables = try String.fetchAll(
        db, sql: """
            SELECT m.name FROM sqlite_master m WHERE m.type = 'table'
                AND EXISTS (SELECT 1 FROM pragma_table_info(m.name) c WHERE c.name = 'profile_key') ORDER BY m.name
            """)
    return try tables.filter { table in
        try queryPlan(db, "SELECT * FROM \"\(table)\" WHERE profile_key = ?", ["demo/paul"]).contains { $0.hasPrefix("SCAN") }
    }
}
