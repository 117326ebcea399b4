import Foundation
import GRDB

/// Captures every row change of a partition database, in the transaction that made it, into the `changelog` table that
/// the relay produces to the service's changelog topic (after the outbox, see `PartitionDatabase.produceOutbox`).
///
/// Capture is generic: SQLite triggers generated from each table's columns and primary key, installed at every opening
/// (so that a migration's new tables and columns are captured too). The outbox and the changelog's own tables are not
/// captured: the outbox is produced before the changelog records of the same transactions, so that state restored from
/// the changelog never claims outputs that were not produced.
package enum ChangelogCapture {
    static let triggerPrefix = "herald_changelog_"
    static let ownTables: Set<String> = ["outbox", "changelog", "changelog_state"]

    static let tablesSQL = """
        CREATE TABLE IF NOT EXISTS changelog (
            seq INTEGER PRIMARY KEY AUTOINCREMENT, tbl TEXT NOT NULL, pk TEXT NOT NULL, image TEXT);
        CREATE TABLE IF NOT EXISTS changelog_state (
            id INTEGER PRIMARY KEY CHECK (id = 0), writer TEXT, next_offset INTEGER NOT NULL DEFAULT 0,
            restoring INTEGER NOT NULL DEFAULT 0);
        INSERT OR IGNORE INTO changelog_state (id) VALUES (0);
        """

    /// `herald_is_utf8(blob)`: 1 when the bytes are valid UTF-8 (SQLite does not check: a BLOB cast to TEXT keeps any
    /// bytes, and JSON built from it would carry them, then read back as U+FFFD). Registered on every connection of a
    /// partition database; deterministic, so SQLite may call it in triggers.
    static let isUTF8 = DatabaseFunction("herald_is_utf8", argumentCount: 1, pure: true) { values in
        guard case .blob(let data) = values[0].storage else { return 0 }
        return data.withUnsafeBytes { String(validating: $0.bindMemory(to: UInt8.self), as: UTF8.self) != nil } ? 1 : 0
    }

    /// The tables whose rows are captured, with their columns and primary key.
    static func capturedTables(_ db: Database) throws -> [TableShape] {
        let names = try String.fetchAll(
            db, sql: "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name")
        return try names.filter { !ownTables.contains($0) }.map { name in
            let columns = try db.columns(in: name).map(\.name)
            let key = try db.primaryKey(name).columns
            return TableShape(name: name, columns: columns, key: key)
        }
    }

    /// Creates the changelog's tables if needed and (re)creates every capture trigger.
    static func install(_ db: Database) throws {
        try db.execute(sql: tablesSQL)
        try dropTriggers(db)
        for table in try capturedTables(db) {
            let q = table.quotedName
            try db.execute(sql: """
                CREATE TRIGGER \(triggerPrefix)\(table.name)_insert AFTER INSERT ON \(q) BEGIN
                    INSERT INTO changelog (tbl, pk, image) VALUES ('\(table.name)', \(table.keyJSON("NEW")), \(table.imageJSON("NEW")));
                END;
                CREATE TRIGGER \(triggerPrefix)\(table.name)_update AFTER UPDATE ON \(q) BEGIN
                    INSERT INTO changelog (tbl, pk, image)
                        SELECT '\(table.name)', \(table.keyJSON("OLD")), NULL WHERE \(table.keyChanged);
                    INSERT INTO changelog (tbl, pk, image) VALUES ('\(table.name)', \(table.keyJSON("NEW")), \(table.imageJSON("NEW")));
                END;
                CREATE TRIGGER \(triggerPrefix)\(table.name)_delete AFTER DELETE ON \(q) BEGIN
                    INSERT INTO changelog (tbl, pk, image) VALUES ('\(table.name)', \(table.keyJSON("OLD")), NULL);
                END;
                """)
        }
    }

    /// Removes the capture triggers (a restore writes rows without capturing them).
    static func dropTriggers(_ db: Database) throws {
        let triggers = try String.fetchAll(
            db, sql: "SELECT name FROM sqlite_master WHERE type = 'trigger' AND name LIKE ?",
            arguments: ["\(triggerPrefix)%"])
        for trigger in triggers { try db.execute(sql: "DROP TRIGGER \"\(trigger)\"") }
    }

    /// A tombstone for a row of `table` (its key as the changelog writes it).
    static func tombstone(_ db: Database, table: String, key: String) throws {
        try db.execute(sql: "INSERT INTO changelog (tbl, pk, image) VALUES (?, ?, NULL)", arguments: [table, key])
    }

    /// Renames a table in a migration and says so in the changelog, if the database keeps one: a tombstone under the
    /// old name for each row, and its image under the new name, as one transaction of the changelog. A restore then
    /// ends with every row under its new name, compacted or not. The service also lists the rename in
    /// `ChangelogSettings.renamedTables`, for a changelog that only versions before the rename wrote.
    package static func renameTable(_ db: Database, from old: String, to new: String) throws {
        let captured = try db.tableExists("changelog") ? try capturedTables(db).first { $0.name == old } : nil
        if let captured {
            try db.execute(sql: "INSERT INTO changelog (tbl, pk, image) SELECT ?, \(captured.keyJSON("r")), NULL FROM \(captured.quotedName) AS r", arguments: [old])
        }
        try db.execute(sql: "ALTER TABLE \(TableShape.quote(old)) RENAME TO \(TableShape.quote(new))")
        guard captured != nil, let renamed = try capturedTables(db).first(where: { $0.name == new }) else { return }
        try db.execute(
            sql: "INSERT INTO changelog (tbl, pk, image) SELECT ?, \(renamed.keyJSON("r")), \(renamed.imageJSON("r")) FROM \(renamed.quotedName) AS r",
            arguments: [new])
        try markCommit(db)
    }

    /// Ends a transaction in the changelog: its rows are applied by a restore only once this is read.
    static func markCommit(_ db: Database) throws {
        try db.executeCached(sql: "INSERT INTO changelog (tbl, pk, image) VALUES ('', '', NULL)")
    }

    /// Captures every row of every table again, as if each had just been written: the whole state goes to the
    /// changelog (a database that existed before its changelog, or whose changelog lost its beginning).
    static func snapshot(_ db: Database) throws {
        for table in try capturedTables(db) {
            let column = table.quote(table.columns[0])
            try db.execute(sql: "UPDATE \(table.quotedName) SET \(column) = \(column)")
        }
    }

    struct Pending {
        var seq: Int64
        var change: ChangelogEntry.Change
    }

    /// The oldest `limit` records past `produced` (a sequence number; AUTOINCREMENT: one is never given twice), in
    /// sequence order.
    static func pending(_ db: Database, after produced: Int64 = 0, limit: Int) throws -> [Pending] {
        let statement = try db.cachedStatement(sql: "SELECT seq, tbl, pk, image FROM changelog WHERE seq > ? ORDER BY seq LIMIT ?")
        return try Row.fetchAll(statement, arguments: [produced, limit])
            .map { row in
                let table: String = row["tbl"]
                if table.isEmpty { return Pending(seq: row["seq"], change: .commit) }
                let image: String? = row["image"]
                return Pending(seq: row["seq"], change: .row(table: table, key: row["pk"], image: image.map { Array($0.utf8) }))
            }
    }

    /// One record per row per transaction: a row written several times in one transaction (a batch applies many
    /// records at once) keeps only its last image, which is all a restore applies at the transaction's commit.
    static func lastImagePerTransaction(_ records: [Pending]) -> [Pending] {
        var kept: [Pending] = []
        kept.reserveCapacity(records.count)
        var transaction: [Pending] = []
        var lastIndex: [String: Int] = [:]
        func close() {
            for (index, record) in transaction.enumerated() {
                if case .row(let table, let key, _) = record.change, lastIndex["\(table)/\(key)"] != index { continue }
                kept.append(record)
            }
            transaction.removeAll(keepingCapacity: true)
            lastIndex.removeAll(keepingCapacity: true)
        }
        for record in records {
            if case .row(let table, let key, _) = record.change { lastIndex["\(table)/\(key)"] = transaction.count }
            transaction.append(record)
            if record.change == .commit { close() }
        }
        close()
        return kept
    }

    /// Forgets the records the broker acknowledged, and records where the changelog now ends for this database.
    static func produced(_ db: Database, through seq: Int64, nextOffset: Int64) throws {
        try db.executeCached(sql: "DELETE FROM changelog WHERE seq <= ?", arguments: [seq])
        try advance(db, to: nextOffset)
    }

    /// Records that the changelog up to `offset` is reflected in this database.
    static func advance(_ db: Database, to offset: Int64) throws {
        try db.executeCached(
            sql: "UPDATE changelog_state SET next_offset = max(next_offset, ?) WHERE id = 0", arguments: [offset])
    }

    /// The writer id this database's changelog records carry.
    static func writer(_ db: Database) throws -> String {
        try String.fetchOne(db.cachedStatement(sql: "SELECT writer FROM changelog_state WHERE id = 0")) ?? ""
    }

    /// This database writes the changelog from `offset` on, under a new writer id (a takeover, the end of a restore).
    static func startWriter(_ db: Database, at offset: Int64) throws {
        try db.execute(
            sql: "UPDATE changelog_state SET writer = ?, next_offset = ?, restoring = 0 WHERE id = 0",
            arguments: [UUID().uuidString, offset])
    }
}

/// A table's name, columns and primary key (the hidden `rowid` for a table without one).
struct TableShape: Sendable {
    var name: String
    var columns: [String]
    var key: [String]

    func quote(_ identifier: String) -> String { Self.quote(identifier) }
    static func quote(_ identifier: String) -> String { "\"\(identifier.replacingOccurrences(of: "\"", with: "\"\""))\"" }
    var quotedName: String { quote(name) }

    /// The image's columns: every column, and the rowid of a table without a primary key.
    var imageColumns: [String] { columns + key.filter { !columns.contains($0) } }

    func keyJSON(_ row: String) -> String {
        "json_array(\(key.map { "\(row).\(quote($0))" }.joined(separator: ", ")))"
    }

    func imageJSON(_ row: String) -> String {
        let members = imageColumns.map { column in
            let value = "\(row).\(quote(column))"
            // A BLOB that holds JSON text (the notifier's contacts, send requests and inbox payloads) goes as that
            // text, `{"$t": …}`, about its own size; any other BLOB as hex, `{"$b": …}`, twice its size. Text means
            // valid UTF-8 without NUL, which SQLite's cast does not check (`herald_is_utf8`).
            return "'\(column)', CASE typeof(\(value)) WHEN 'blob' THEN "
                + "CASE WHEN instr(\(value), x'00') = 0 AND herald_is_utf8(\(value)) AND json_valid(CAST(\(value) AS TEXT)) "
                + "THEN json_object('$t', CAST(\(value) AS TEXT)) ELSE json_object('$b', hex(\(value))) END "
                + "WHEN 'real' THEN json_object('$r', printf('%!.17g', \(value))) ELSE \(value) END"
        }
        return "json_object(\(members.joined(separator: ", ")))"
    }

    var keyChanged: String {
        key.map { "OLD.\(quote($0)) IS NOT NEW.\(quote($0))" }.joined(separator: " OR ")
    }
}
