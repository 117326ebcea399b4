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
