import Foundation
import GRDB

/// Tells, after each commit of a partition database's writer, the owners (`RowOwners`) of every row the transaction
/// inserted, updated or deleted: whatever code wrote it (a batch, a timer, a backfill, a retention round, a restore).
///
/// SQLite does the watching: a TEMP trigger per owned table and change kind, on the writer's connection only, passes
/// the row's owner key (before and after an update: a row that moves changes both owners) to a function that collects
/// them for the transaction. They are told after the commit, never before: a read that starts after the telling sees
/// the committed rows. A rollback forgets them (nothing changed). Not seen: a row an `INSERT OR REPLACE` deletes over
/// a unique key (SQLite fires no delete trigger for it without `recursive_triggers`): a table whose rows a cached read
/// reads has its owner in its key, so that a replaced row is the same owner's.
final class RowChangeWatch: TransactionObserver, @unchecked Sendable {
    static let function = "herald_row_owner_changed"
    static let triggerPrefix = "herald_row_watch_"

    /// The transaction's owners so far; touched on the writer's queue only (triggers and commit hooks run there).
    private var changed: Set<String> = []
    /// The last one added: a write changes several rows of one owner in a row, compared before hashed.
    private var last = ""
    private let committed: @Sendable (Set<String>) -> Void

    private init(committed: @escaping @Sendable (Set<String>) -> Void) {
        self.committed = committed
    }

    /// Installs the watch on the writer connection `db` (outside a transaction); `committed` is called on the writer,
    /// after each commit that changed an owned row, with their owners. The connection keeps the watch while it is
    /// open.
    static func install(
        _ db: Database, owners: RowOwners, committed: @escaping @Sendable (Set<String>) -> Void
    ) throws {
        let watch = RowChangeWatch(committed: committed)
        db.add(function: DatabaseFunction(function, argumentCount: 1, pure: false) { [unowned watch] values in
            if let key = String.fromDatabaseValue(values[0]), key != watch.last {
                watch.changed.insert(key)
                watch.last = key
            }
            return nil
        })
        for (table, key) in try owners.owned(db) {
            let (new, old) = (RowOwners.key(key, of: "NEW"), RowOwners.key(key, of: "OLD"))
            let name = "\(triggerPrefix)\(table)"
            let quoted = "main.\"\(table)\""
            try db.execute(sql: """
                CREATE TEMP TRIGGER IF NOT EXISTS "\(name)_insert" AFTER INSERT ON \(quoted) BEGIN
                    SELECT \(function)(\(new));
                END;
                CREATE TEMP TRIGGER IF NOT EXISTS "\(name)_update" AFTER UPDATE ON \(quoted) BEGIN
                    SELECT \(function)(\(old)), \(function)(\(new));
                END;
                CREATE TEMP TRIGGER IF NOT EXISTS "\(name)_delete" AFTER DELETE ON \(quoted) BEGIN
                    SELECT \(function)(\(old));
                END;
                """)
        }
        db.add(transactionObserver: watch, extent: .databaseLifetime)
    }

    // MARK: TransactionObserver: no row events (the triggers collect), only the transaction's end

    func observes(eventsOfKind eventKind: DatabaseEventKind) -> Bool { false }

    func databaseDidChange(with event: DatabaseEvent) {}

    func databaseDidCommit(_ db: Database) {
        guard !changed.isEmpty else { return }
        let owners = changed
        forget()
        committed(owners)
    }

    func databaseDidRollback(_ db: Database) { forget() }

    private func forget() {
        changed.removeAll(keepingCapacity: true)
        last = ""
    }
}
