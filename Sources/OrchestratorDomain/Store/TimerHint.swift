import Foundation
import GRDB
import PartitionStore
import Shared
import Synchronization

/// When a partition's earliest timer is due, held in memory so that a tick with nothing due reads nothing (issue 58:
/// the ticker used to read every partition ten times a second, idle or not). Every timer a transaction sets or moves
/// lowers it (a temporary trigger on the writer connection calls `herald_timer_set` with the row's time, in the
/// transaction); a run of the timers sets it to the earliest left, in the same transaction, so that no timer set
/// meanwhile is missed (the writer runs one transaction at a time). A rollback can leave it too early: one tick then
/// finds nothing and sets it right. Until its first run it is due (a database opened, restored or migrated).
package final class TimerHint: Sendable {
    private let earliest = Mutex(Date.distantPast)

    package init() {}

    /// Whether a timer may be due at `now`, to the millisecond as the stored times compare (`WireTime.rounded`).
    package func isDue(at now: Date) -> Bool {
        let now = WireTime.rounded(now)
        return earliest.withLock { $0 <= now }
    }

    /// A timer set (or moved) to `due`.
    func lower(to due: Date) { earliest.withLock { $0 = min($0, due) } }

    /// Due at once: a run failed (its transaction may have rolled back after it set the hint).
    package func invalidate() { lower(to: .distantPast) }

    /// The earliest timer left after a run (nil: none).
    func reset(to next: Date?) { earliest.withLock { $0 = next ?? .distantFuture } }

    /// Installs the trigger and its function on the database's writer: from here on, every timer it sets lowers this
    /// hint. Once per opened database (the trigger is temporary: it goes with the connection).
    package func watch(_ database: PartitionDatabase) async throws {
        try await database.prepareWriter { [self] db in
            db.add(function: DatabaseFunction("herald_timer_set", argumentCount: 1, pure: false) { values in
                if let text = String.fromDatabaseValue(values[0]), let due = WireTime.parse(text) { self.lower(to: due) }
                return nil
            })
            try db.execute(sql: """
                CREATE TEMP TRIGGER IF NOT EXISTS timer_hint_insert AFTER INSERT ON main.timers
                BEGIN SELECT herald_timer_set(NEW.due_at); END;
                CREATE TEMP TRIGGER IF NOT EXISTS timer_hint_update AFTER UPDATE OF due_at ON main.timers
                BEGIN SELECT herald_timer_set(NEW.due_at); END;
                """)
        }
    }
}
