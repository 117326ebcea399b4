import Foundation
import GRDB
import Shared
import Synchronization

/// When a partition's next work of each kind may be due, held in memory so that a look with nothing due reads nothing
/// (issue 58: the orchestrator's ticker and the notifier's workers read every partition several times a second, idle
/// or not). Every row a transaction makes due lowers the hint of its kind: temporary triggers on the writer connection
/// (`watch`) call a function with the kind and the row's time, in the transaction. The run of that work sets the hint
/// to the earliest left, in its own transaction (`reset`), so that nothing set meanwhile is missed: the writer runs one
/// transaction at a time. A rollback can leave a hint too early: one look then finds nothing and sets it right. Until
/// a run sets it, a kind is due (a database just opened, restored or migrated). Times compare to the millisecond, as
/// the stored texts do (`WireTime.rounded`).
package final class DueHints: Sendable {
    private let earliest = Mutex([String: Date]())

    package init() {}

    /// Whether work of `kind` may be due at `now`.
    package func isDue(_ kind: String, at now: Date) -> Bool {
        let now = WireTime.rounded(now)
        return earliest.withLock { ($0[kind] ?? .distantPast) <= now }
    }

    func lower(_ kind: String, to due: Date) {
        earliest.withLock { $0[kind] = min($0[kind] ?? .distantFuture, due) }
    }

    /// The earliest work of `kind` left after a run that took all that was due (nil: none).
    package func reset(_ kind: String, to next: Date?) { earliest.withLock { $0[kind] = next ?? .distantFuture } }

    /// Due at once: a run failed (its transaction may have rolled back after it set the hint).
    package func invalidate(_ kind: String) { lower(kind, to: .distantPast) }

    /// Installs `function` (two arguments: the kind, and the time as stored: a time lowers the kind's hint, an empty
    /// text makes it due now, NULL does nothing) and then `triggers` (SQL creating temporary triggers that call it) on
    /// the database's writer. Once per opened database: the triggers go with the connection.
    package func watch(_ database: PartitionDatabase, function: String, triggers: String) async throws {
        try await database.prepareWriter { [self] db in
            db.add(function: DatabaseFunction(function, argumentCount: 2, pure: false) { values in
                guard let kind = String.fromDatabaseValue(values[0]), let time = String.fromDatabaseValue(values[1]) else {
                    return nil
                }
                // A time that does not read is looked at now.
                self.lower(kind, to: time.isEmpty ? .distantPast : WireTime.parse(time) ?? .distantPast)
                return nil
            })
            try db.execute(sql: triggers)
        }
    }
}
