import Foundation
import GRDB
import PartitionStore
import Shared

/// Where a send's target stands in the ledger (`ledger.state`). `sending` is committed before the provider is called; a
/// row found in it at start was in flight when the process stopped.
enum LedgerState: String, Sendable, CaseIterable {
    /// Waiting for an attempt (first, or again at `due_at`).
    case pending
    /// An attempt is out.
    case sending
    case sent
    case failed
    case suppressed
    /// Webhook: kept while its endpoint is disabled (it answered 410 Gone), neither attempted nor finished; pending
    /// again, in its order, when `herald webhook replay` enables the endpoint (docs/webhooks.md).
    case parked
}

/// A due ledger row, with its send's request as received.
struct DueTarget {
    var sendID: String
    var targetID: String
    /// The target as JSON (`DeliveryTarget`).
    var target: String
    var attempts: Int
    var profileKey: String
    var request: [UInt8]
}

/// `ledger`: one row per send and target, claimed for attempts and finished by their outcomes (docs/notifier.md, "The
/// ledger"); also the dedupe of what another owner finished (its reports read back). The SQL names states through
/// `LedgerState`, as literals (a partial index is used only then).
struct LedgerTable {
    let db: Database

    init(_ db: Database) { self.db = db }

    private static let reportSQL = """
        INSERT INTO ledger (send_id, target_id, channel, profile_key, target, state, due_at, reason, updated_at)
        VALUES (?, ?, ?, ?, '{}', ?, ?, ?, ?)
        ON CONFLICT (send_id, target_id) DO UPDATE SET state = excluded.state, reason = excluded.reason,
            updated_at = excluded.updated_at
        WHERE ledger.state IN ('\(LedgerState.pending.rawValue)', '\(LedgerState.sending.rawValue)', '\(LedgerState.parked.rawValue)')
        """

    /// A target finished (a report read back): recorded as a new row, or over a row not finished here (a parked one
    /// included: another owner sent it after a replay).
    func finishedElsewhere(
        sendID: String, targetID: String, channel: MessageChannel, profileKey: String, state: LedgerState, reason: String?,
        at time: Date
    ) throws {
        let stamp = WireTime.format(time)
        try db.executeCached(
            sql: Self.reportSQL,
            arguments: [sendID, targetID, channel.rawValue, profileKey, state.rawValue, stamp, reason, stamp])
    }

    private static let recoverSQL = """
        UPDATE ledger SET state = '\(LedgerState.pending.rawValue)',
            due_at = max(due_at, strftime('%Y-%m-%dT%H:%M:%fZ', updated_at, ?))
        WHERE state = '\(LedgerState.sending.rawValue)'
        """

    /// Rows left `sending` by a stop are attempted again, not before `inDoubt` after their attempt began: its answer
    /// may still come (the other instance that made it, restored from the changelog, may be alive and report it, which
    /// finishes the row), and only once the provider's timeout has passed can nobody be waiting for it. Returns how many.
    func recoverInFlight(inDoubt: Duration) throws -> Int {
        try db.execute(sql: Self.recoverSQL, arguments: ["+\(Double(inDoubt.milliseconds) / 1000) seconds"])
        return db.changesCount
    }

    private static let dueSQL = """
        SELECT l.send_id, l.target_id, l.target, l.attempts, l.profile_key, s.request
        FROM ledger l JOIN sends s ON s.send_id = l.send_id
        WHERE l.channel = ? AND l.state = '\(LedgerState.pending.rawValue)' AND l.due_at <= ? ORDER BY l.due_at LIMIT ?
        """

    private static let dueExcludingSQL = """
        SELECT l.send_id, l.target_id, l.target, l.attempts, l.profile_key, s.request
        FROM ledger l JOIN sends s ON s.send_id = l.send_id
        WHERE l.channel = ? AND l.state = '\(LedgerState.pending.rawValue)' AND l.due_at <= ?
            AND l.target_id NOT IN (SELECT value FROM json_each(?)) ORDER BY l.due_at LIMIT ?
        """

    /// Up to `limit` pending rows of a channel due at `time`, oldest first, but those of the targets `excluding` (the
    /// webhook endpoints with every lane taken).
    func due(channel: MessageChannel, at time: Date, limit: Int, excluding: [String] = []) throws -> [DueTarget] {
        let rows = excluding.isEmpty
            ? try Row.fetchAll(db.cachedStatement(sql: Self.dueSQL), arguments: [channel.rawValue, WireTime.format(time), limit])
            : try Row.fetchAll(
                db.cachedStatement(sql: Self.dueExcludingSQL),
                arguments: [channel.rawValue, WireTime.format(time), String(decoding: try Wire.encodeValue(excluding), as: UTF8.self), limit])
        return rows.map { row in
            DueTarget(
                sendID: row["send_id"], targetID: row["target_id"], target: row["target"], attempts: row["attempts"],
                profileKey: row["profile_key"], request: Array(row["request"] as Data))
        }
    }

    private static let attemptSQL = """
        UPDATE ledger SET state = '\(LedgerState.sending.rawValue)', attempts = attempts + 1, target = ?, updated_at = ?
        WHERE send_id = ? AND target_id = ?
        """

    /// A due row claimed for its next attempt, to `target` (a token replaced since is the new one).
    func attempt(sendID: String, targetID: String, target: String, at time: Date) throws {
        try db.executeCached(sql: Self.attemptSQL, arguments: [target, WireTime.format(time), sendID, targetID])
    }

    /// A new row; false when one is there (finished by another owner, whose report was read back).
    func insert(
        sendID: String, targetID: String, channel: MessageChannel, profileKey: String, target: String, state: LedgerState,
        attempts: Int, reason: DeliveryReason?, at time: Date
    ) throws -> Bool {
        let stamp = WireTime.format(time)
        try db.executeCached(sql: """
                INSERT INTO ledger (send_id, target_id, channel, profile_key, target, state, attempts, due_at, reason, updated_at)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING
                """, arguments: [sendID, targetID, channel.rawValue, profileKey, target, state.rawValue, attempts, stamp, reason?.text, stamp])
        return db.changesCount > 0
    }

    private static let finishPendingSQL = """
        UPDATE ledger SET state = ?, reason = ?, provider_message_id = ?, updated_at = ?
        WHERE send_id = ? AND target_id = ? AND state = '\(LedgerState.pending.rawValue)'
        """

    /// Finishes a row the claim is looking at (`pending`): expired, suppressed, unreadable, or sent by an earlier
    /// attempt's late answer; returns whether it was pending.
    @discardableResult
    func finishPending(
        sendID: String, targetID: String, _ state: LedgerState, reason: DeliveryReason?, messageID: String?, at time: Date
    ) throws -> Bool {
        try db.executeCached(sql: Self.finishPendingSQL, arguments: [state.rawValue, reason?.text, messageID, WireTime.format(time), sendID, targetID])
        return db.changesCount > 0
    }

    private static let finishAttemptSQL = """
        UPDATE ledger SET state = ?, reason = ?, provider_message_id = ?, updated_at = ?
        WHERE send_id = ? AND target_id = ? AND attempts = ?
            AND state IN ('\(LedgerState.sending.rawValue)', '\(LedgerState.pending.rawValue)')
        """

    /// Finishes a row with the outcome of attempt `attempt`, if the row is still at that attempt; returns whether it was.
    func finishAttempt(
        sendID: String, targetID: String, attempt: Int, _ state: LedgerState, reason: DeliveryReason?, messageID: String?,
        at time: Date
    ) throws -> Bool {
        try db.executeCached(
            sql: Self.finishAttemptSQL, arguments: [state.rawValue, reason?.text, messageID, WireTime.format(time), sendID, targetID, attempt])
        return db.changesCount > 0
    }

    private static let retrySQL = """
        UPDATE ledger SET state = '\(LedgerState.pending.rawValue)', due_at = ?, reason = ?, updated_at = ?
        WHERE send_id = ? AND target_id = ? AND attempts = ?
            AND state IN ('\(LedgerState.sending.rawValue)', '\(LedgerState.pending.rawValue)')
        """

    /// Attempt `attempt` is to be made again at `due`, if the row is still at it; returns whether it was.
    func retry(sendID: String, targetID: String, attempt: Int, due: Date, reason: DeliveryReason, at time: Date) throws -> Bool {
        try db.executeCached(sql: Self.retrySQL, arguments: [WireTime.format(due), reason.text, WireTime.format(time), sendID, targetID, attempt])
        return db.changesCount > 0
    }

    private static let parkSQL = """
        UPDATE ledger SET state = '\(LedgerState.parked.rawValue)', reason = ?, updated_at = ?
        WHERE send_id = ? AND target_id = ? AND state = '\(LedgerState.pending.rawValue)'
        """

    /// A due row of a disabled endpoint is parked (its due time kept: a replay gives rows back in that order); returns
    /// whether it was pending.
    func park(sendID: String, targetID: String, reason: DeliveryReason, at time: Date) throws -> Bool {
        try db.executeCached(sql: Self.parkSQL, arguments: [reason.text, WireTime.format(time), sendID, targetID])
        return db.changesCount > 0
    }

    private static let unparkSQL = """
        UPDATE ledger SET state = '\(LedgerState.pending.rawValue)', updated_at = ?
        WHERE state = '\(LedgerState.parked.rawValue)' AND channel = '\(MessageChannel.webhook.rawValue)' AND target_id = ?
        """

    private static let unparkAllSQL = """
        UPDATE ledger SET state = '\(LedgerState.pending.rawValue)', updated_at = ?
        WHERE state = '\(LedgerState.parked.rawValue)' AND channel = '\(MessageChannel.webhook.rawValue)'
            AND target_id NOT IN (SELECT value FROM json_each(?))
        """

    /// The parked rows of `endpoint` (all endpoints but `disabled` when nil) are pending again, due at their old due
    /// times (oldest first); returns how many.
    func unpark(endpoint: String?, disabled: [String] = [], at time: Date) throws -> Int {
        if let endpoint {
            try db.executeCached(sql: Self.unparkSQL, arguments: [WireTime.format(time), endpoint])
        } else {
            try db.executeCached(
                sql: Self.unparkAllSQL,
                arguments: [WireTime.format(time), String(decoding: try Wire.encodeValue(disabled), as: UTF8.self)])
        }
        return db.changesCount
    }

    private static let pruneSQL = """
        DELETE FROM ledger WHERE (send_id, target_id) IN (
            SELECT send_id, target_id FROM ledger
            WHERE state IN ('\(LedgerState.sent.rawValue)', '\(LedgerState.failed.rawValue)', '\(LedgerState.suppressed.rawValue)')
                AND updated_at < ? LIMIT ?)
        """

    /// Deletes up to `limit` finished rows last changed before `cutoff`; returns how many.
    func pruneFinished(before cutoff: Date, limit: Int) throws -> Int {
        try db.execute(sql: Self.pruneSQL, arguments: [WireTime.format(cutoff), limit])
        return db.changesCount
    }

    /// A send's rows, by target (for operators and tests).
    func rows(sendID: String) throws -> [(targetID: String, state: String, attempts: Int, reason: String?)] {
        try Row.fetchAll(db, sql: "SELECT * FROM ledger WHERE send_id = ? ORDER BY target_id", arguments: [sendID])
            .map { ($0["target_id"], $0["state"], $0["attempts"], $0["reason"]) }
    }

    /// Rows of a channel per state.
    func counts(channel: MessageChannel) throws -> [String: Int] {
        var counts: [String: Int] = [:]
        for row in try Row.fetchAll(
            db, sql: "SELECT state, count(*) AS n FROM ledger WHERE channel = ? GROUP BY state", arguments: [channel.rawValue])
        {
            counts[row["state"]] = row["n"]
        }
        return counts
    }
}
