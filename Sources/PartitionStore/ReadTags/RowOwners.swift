import Foundation
import GRDB

/// Whose rows a partition database's tables hold: for each row, the key of the entity it belongs to (a profile's key in
/// the orchestrator). A read cached under that key (`ReadTagCache`) is dropped when any row of it changes
/// (`RowChangeWatch`).
package struct RowOwners: Sendable {
    /// Every table with this column is owned by its value (`profile_key`).
    package var column: String
    /// Tables without it whose rows still belong to an owner: the table → an SQL expression of the owner key over the
    /// row's columns, each written `row.<column>` (`row.project || '/install/' || row.installation_id`).
    package var expressions: [String: String]

    package init(column: String, expressions: [String: String] = [:]) {
        self.column = column
        self.expressions = expressions
    }

    /// Each owned table of the database with its owner key expression, its columns read from `row.` (`RowChangeWatch`
    /// reads them from `NEW` and `OLD`: `key(of:)`).
    func owned(_ db: Database) throws -> [(table: String, key: String)] {
        let names = try String.fetchAll(
            db, sql: "SELECT name FROM main.sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name")
        var owned: [(table: String, key: String)] = []
        for name in names {
            if let expression = expressions[name] {
                owned.append((name, expression))
            } else if try db.columns(in: name).contains(where: { $0.name == column }) {
                owned.append((name, "row.\"\(column)\""))
            }
        }
        return owned
    }

    /// An owner key expression with its columns read from the row image `image` (`NEW`, `OLD`, or a table's name).
    static func key(_ expression: String, of image: String) -> String {
        expression.replacingOccurrences(of: "row.", with: "\(image).")
    }

    /// The tables whose rows have an owner.
    package func tables(_ db: Database) throws -> Set<String> { Set(try owned(db).map(\.table)) }
}
