import Foundation
import GRDB
import PartitionStore
import Shared

/// Where a received send stands (`sends.state`).
enum SendState: String, Sendable {
    /// Waiting to be fanned out into ledger rows (maybe for its contact: `check_at`).
    case queued
    /// Decided ahead of its time (`not_before`): queued at that time.
    case held
    /// Fanned out: its targets are ledger rows.
    case resolved
}

/// `sends`: the send requests received, one per send id (a replayed send is dropped), queued until they are fanned out
/// into ledger rows. The SQL names states through `SendState`, as literals (a partial index is used only then).
struct SendsTable {
    let db: Database

    init(_ db: Database) { self.db = db }

    /// Keeps a send received now (held until its `not_before`); false when its id was received before.
    func insert(_ send: SendRequest, request: [UInt8], held: Bool, receivedAt now: Date) throws -> Bool {
        try db.executeCached(sql: """
                INSERT INTO sends (send_id, channel, profile_key, request, state, received_at, not_before) VALUES (?, ?, ?, ?, ?, ?, ?)
                ON CONFLICT (send_id) DO NOTHING
                """, arguments: [
                    send.sendID, send.channel.rawValue, send.profileKey, Data(request),
                    (held ? SendState.held : .queued).rawValue, WireTime.format(now), held ? send.notBefore.map(WireTime.format) : nil,
                ])
        return db.changesCount > 0
    }

    private static let releaseHeldSQL = """
        UPDATE sends SET state = '\(SendState.queued.rawValue)', received_at = not_before
        WHERE channel = ? AND state = '\(SendState.held.rawValue)' AND not_before <= ?
        """

    /// Queues the held sends whose time came, as if received then.
    func releaseHeld(channel: MessageChannel, at time: Date) throws {
        try db.executeCached(sql: Self.releaseHeldSQL, arguments: [channel.rawValue, WireTime.format(time)])
    }

    /// A queued send is looked at again from `time` on.
    func checkAgain(_ sendID: String, at time: Date) throws {
        try db.executeCached(sql: "UPDATE sends SET check_at = ? WHERE send_id = ?", arguments: [WireTime.format(time), sendID])
    }

    private static let releaseWaitingSQL =
        "UPDATE sends SET check_at = '' WHERE profile_key = ? AND check_at > '' AND state = '\(SendState.queued.rawValue)'"

    /// The profile's sends waiting for a snapshot are due now (`check_at` empty: before any time, and still saying that
    /// the send waited).
    func releaseWaiting(profile key: String) throws {
        try db.executeCached(sql: Self.releaseWaitingSQL, arguments: [key])
    }

    private static let queuedSQL = """
        SELECT send_id, request, received_at, check_at FROM sends
        WHERE channel = ? AND state = '\(SendState.queued.rawValue)' AND (check_at IS NULL OR check_at <= ?) LIMIT ?
        """

    /// Up to `limit` queued sends of a channel due at `time` (those waiting for their contact once their check is
    /// due), in arrival order; `waited`: the send was set to be looked at again (`check_at` is a time, or empty once its
    /// contact came).
    func queued(channel: MessageChannel, at time: Date, limit: Int) throws -> [(sendID: String, request: [UInt8], receivedAt: Date, waited: Bool)] {
        try Row.fetchAll(db.cachedStatement(sql: Self.queuedSQL), arguments: [channel.rawValue, WireTime.format(time), limit]).map {
            ($0["send_id"], Array($0["request"] as Data), try $0.requiredTime("received_at"), ($0["check_at"] as String?) != nil)
        }
    }

    private static let resolveSQL =
        "UPDATE sends SET state = '\(SendState.resolved.rawValue)', check_at = NULL WHERE send_id = ?"

    /// The send is fanned out (or unreadable): done with.
    func resolve(_ sendID: String) throws {
        try db.executeCached(sql: Self.resolveSQL, arguments: [sendID])
    }

    private static let hasWorkSQL = """
        SELECT EXISTS (SELECT 1 FROM sends WHERE channel = ?1 AND state = '\(SendState.queued.rawValue)' AND (check_at IS NULL OR check_at <= ?2))
            OR EXISTS (SELECT 1 FROM ledger WHERE channel = ?1 AND state = '\(LedgerState.pending.rawValue)' AND due_at <= ?2)
            OR EXISTS (SELECT 1 FROM sends WHERE channel = ?1 AND state = '\(SendState.held.rawValue)' AND not_before <= ?2)
        """

    /// The temporary triggers by which every row made due, now or later (a queued or held send, a pending ledger row, a
    /// waiting send released), lowers its channel's kind in the partition's `DueHints` (`NotifierPartitions`).
    static let dueTriggers: String = {
        let (queued, held, pending) = (SendState.queued.rawValue, SendState.held.rawValue, LedgerState.pending.rawValue)
        let sendDue = "CASE NEW.state WHEN '\(queued)' THEN coalesce(NEW.check_at, '') WHEN '\(held)' THEN NEW.not_before END"
        let ledgerDue = "CASE WHEN NEW.state = '\(pending)' THEN NEW.due_at END"
        return """
            CREATE TEMP TRIGGER IF NOT EXISTS work_due_send_insert AFTER INSERT ON main.sends
            BEGIN SELECT herald_due(NEW.channel, \(sendDue)); END;
            CREATE TEMP TRIGGER IF NOT EXISTS work_due_send_update AFTER UPDATE OF state, check_at, not_before ON main.sends
            BEGIN SELECT herald_due(NEW.channel, \(sendDue)); END;
            CREATE TEMP TRIGGER IF NOT EXISTS work_due_ledger_insert AFTER INSERT ON main.ledger
            BEGIN SELECT herald_due(NEW.channel, \(ledgerDue)); END;
            CREATE TEMP TRIGGER IF NOT EXISTS work_due_ledger_update AFTER UPDATE OF state, due_at ON main.ledger
            BEGIN SELECT herald_due(NEW.channel, \(ledgerDue)); END;
            """
    }()

    private static let nextWorkSQL = """
        SELECT min(due) FROM (
            SELECT coalesce(check_at, '') AS due FROM sends WHERE channel = ?1 AND state = '\(SendState.queued.rawValue)'
            UNION ALL SELECT not_before FROM sends WHERE channel = ?1 AND state = '\(SendState.held.rawValue)'
            UNION ALL SELECT due_at FROM ledger WHERE channel = ?1 AND state = '\(LedgerState.pending.rawValue)')
        """

    /// When a claim of the channel would next find anything (nil: nothing waits; `distantPast`: now).
    func nextWork(channel: MessageChannel) throws -> Date? {
        guard let due = try String.fetchOne(db.cachedStatement(sql: Self.nextWorkSQL), arguments: [channel.rawValue]) else { return nil }
        return due.isEmpty ? .distantPast : WireTime.parse(due) ?? .distantPast
    }

    /// Whether a claim of the channel would find anything at `time`: a queued or held send due, or a due ledger row (a
    /// read, cheaper than the claim's write transaction).
    func hasWork(channel: MessageChannel, at time: Date) throws -> Bool {
        try Bool.fetchOne(db.cachedStatement(sql: Self.hasWorkSQL), arguments: [channel.rawValue, WireTime.format(time)]) ?? false
    }

    private static let pruneSQL = """
        DELETE FROM sends WHERE send_id IN (
            SELECT send_id FROM sends WHERE state = '\(SendState.resolved.rawValue)' AND received_at < ?
            AND NOT EXISTS (SELECT 1 FROM ledger WHERE ledger.send_id = sends.send_id) LIMIT ?)
        """

    /// Deletes up to `limit` sends resolved before `cutoff` with no target still in the ledger; returns how many.
    func pruneResolved(before cutoff: Date, limit: Int) throws -> Int {
        try db.execute(sql: Self.pruneSQL, arguments: [WireTime.format(cutoff), limit])
        return db.changesCount
    }
}
