import Foundation
import GRDB
import PartitionStore
import Shared
import Synchronization

/// When a partition's next attempt of each channel may be due, held in memory so that a worker's look at every
/// partition (`NotifierPartitions.claim`'s full scan, each poll interval) reads only those where one may be (issue 58:
/// an idle notifier read every partition five times a second per channel). Every row a transaction makes due, now or
/// later (a queued or held send, a pending ledger row, a waiting send released), lowers it through temporary triggers
/// on the writer connection, in the transaction; a claim that was not cut by its limit sets it to the earliest left, in
/// its own transaction (the writer runs one at a time, so nothing set meanwhile is missed). A rollback can leave it too
/// early: one claim then finds nothing and sets it right. Until a claim sets it, it is due (a database just opened).
final class WorkHints: Sendable {
    private let earliest = Mutex([MessageChannel: Date]())

    /// Whether an attempt of `channel` may be due at `now`, to the millisecond as the stored times compare
    /// (`WireTime.rounded`).
    func isDue(_ channel: MessageChannel, at now: Date) -> Bool {
        let now = WireTime.rounded(now)
        return earliest.withLock { ($0[channel] ?? .distantPast) <= now }
    }

    func lower(_ channel: MessageChannel, to due: Date) {
        earliest.withLock { $0[channel] = min($0[channel] ?? .distantFuture, due) }
    }

    /// The earliest attempt of `channel` left after a claim that took all that was due (nil: none).
    func reset(_ channel: MessageChannel, to next: Date?) { earliest.withLock { $0[channel] = next ?? .distantFuture } }

    /// Due at once: a claim failed (its transaction may have rolled back after it set the hint).
    func invalidate(_ channel: MessageChannel) { lower(channel, to: .distantPast) }

    /// Installs the triggers and their function on the database's writer: from here on, every row made due lowers the
    /// hint of its channel. Once per opened database (the triggers are temporary: they go with the connection).
    func watch(_ database: PartitionDatabase) async throws {
        try await database.prepareWriter { [self] db in
            db.add(function: DatabaseFunction("herald_work_due", argumentCount: 2, pure: false) { values in
                guard let channel = String.fromDatabaseValue(values[0]).flatMap(MessageChannel.init(rawValue:)),
                    let time = String.fromDatabaseValue(values[1])
                else { return nil }
                // Empty: due now (a waiting send released); a time that does not read is looked at now too.
                self.lower(channel, to: time.isEmpty ? .distantPast : WireTime.parse(time) ?? .distantPast)
                return nil
            })
            let (queued, held, pending) = (SendState.queued.rawValue, SendState.held.rawValue, LedgerState.pending.rawValue)
            let sendDue = "CASE NEW.state WHEN '\(queued)' THEN coalesce(NEW.check_at, '') WHEN '\(held)' THEN NEW.not_before END"
            let ledgerDue = "CASE WHEN NEW.state = '\(pending)' THEN NEW.due_at END"
            try db.execute(sql: """
                CREATE TEMP TRIGGER IF NOT EXISTS work_hint_send_insert AFTER INSERT ON main.sends
                BEGIN SELECT herald_work_due(NEW.channel, \(sendDue)); END;
                CREATE TEMP TRIGGER IF NOT EXISTS work_hint_send_update AFTER UPDATE OF state, check_at, not_before ON main.sends
                BEGIN SELECT herald_work_due(NEW.channel, \(sendDue)); END;
                CREATE TEMP TRIGGER IF NOT EXISTS work_hint_ledger_insert AFTER INSERT ON main.ledger
                BEGIN SELECT herald_work_due(NEW.channel, \(ledgerDue)); END;
                CREATE TEMP TRIGGER IF NOT EXISTS work_hint_ledger_update AFTER UPDATE OF state, due_at ON main.ledger
                BEGIN SELECT herald_work_due(NEW.channel, \(ledgerDue)); END;
                """)
        }
    }
}
