import Foundation
import GRDB
import PartitionStore
import Shared

/// Where a marketing message of the frequency log stands (`frequency_log.state`).
enum FrequencyLogState: String {
    /// Decided: it counts against the caps until the notifier reports it.
    case decided
    /// The notifier sent it: it counts for good.
    case sent
    /// The notifier did not send it: its slot is free again.
    case released
}

/// `frequency_log`: the marketing messages decided for a profile, for frequency caps (docs/campaigns.md).
struct FrequencyLogTable {
    let db: Database

    init(_ db: Database) { self.db = db }

    /// The profile's messages decided after `since` that still count (all channels, or one).
    func count(_ key: String, since time: Date, channel: MessageChannel?) throws -> Int {
        if let channel {
            return try Int.fetchOne(
                db.cachedStatement(sql: """
                    SELECT count(*) FROM frequency_log
                    WHERE profile_key = ? AND at > ? AND state != ? AND channel = ?
                    """), arguments: [key, WireTime.format(time), FrequencyLogState.released.rawValue, channel.rawValue]) ?? 0
        }
        return try Int.fetchOne(
            db.cachedStatement(sql: "SELECT count(*) FROM frequency_log WHERE profile_key = ? AND at > ? AND state != ?"),
            arguments: [key, WireTime.format(time), FrequencyLogState.released.rawValue]) ?? 0
    }

    /// A message decided now.
    func decided(_ key: String, sendID: String, channel: MessageChannel, at time: Date) throws {
        try db.executeCached(
            sql: "INSERT OR IGNORE INTO frequency_log (profile_key, send_id, channel, at, state) VALUES (?, ?, ?, ?, ?)",
            arguments: [key, sendID, channel.rawValue, WireTime.format(time), FrequencyLogState.decided.rawValue])
    }

    /// The notifier sent the message (any target of it).
    func sent(_ key: String, sendID: String) throws {
        try db.executeCached(
            sql: "UPDATE frequency_log SET state = ? WHERE profile_key = ? AND send_id = ? AND state != ?",
            arguments: [FrequencyLogState.sent.rawValue, key, sendID, FrequencyLogState.sent.rawValue])
    }

    /// The notifier did not send it: freed, unless another target of it was sent.
    func released(_ key: String, sendID: String) throws {
        try db.executeCached(
            sql: "UPDATE frequency_log SET state = ? WHERE profile_key = ? AND send_id = ? AND state = ?",
            arguments: [FrequencyLogState.released.rawValue, key, sendID, FrequencyLogState.decided.rawValue])
    }

    /// Deletes up to `limit` rows decided before `cutoff`; returns how many.
    func prune(before cutoff: Date, limit: Int) throws -> Int {
        try db.execute(
            sql: """
                DELETE FROM frequency_log WHERE (profile_key, send_id) IN (
                    SELECT profile_key, send_id FROM frequency_log WHERE at < ? LIMIT ?)
                """, arguments: [WireTime.format(cutoff), limit])
        return db.changesCount
    }
}
