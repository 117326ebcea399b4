import Foundation
import GRDB
import PartitionStore
import Shared

/// `experiment_sends`: per campaign, experiment version, variant and figure, how many of the partition's send targets
/// ended so, counted from the reports on `herald.deliveries` as they are applied (once each: the reports' dedupe). The
/// figures: the delivery outcomes (`sent`, `failed`, `suppressed`, `token_invalid`, `bounced`) and the first open and
/// click of each target (`opened`, `clicked`, and `opened_machine`, `clicked_machine` for a machine's). What the experiment report shows beside the
/// assignments (docs/measurement.md, "The report").
struct ExperimentSendsTable {
    let db: Database

    init(_ db: Database) { self.db = db }

    func add(campaign: String, version: String, variant: String, outcome: DeliveryFigure, at time: Date) throws {
        try db.executeCached(
            sql: """
                INSERT INTO experiment_sends (campaign_key, version, variant, outcome, count, updated_at) VALUES (?, ?, ?, ?, 1, ?)
                ON CONFLICT DO UPDATE SET count = count + 1, updated_at = max(updated_at, excluded.updated_at)
                """, arguments: [campaign, version, variant, outcome.rawValue, WireTime.format(time)])
    }

    /// The campaign's counts: (version, variant, figure, count). A figure this code does not know (a row a newer
    /// version wrote) is an error, not a silent zero.
    func counts(campaign: String) throws -> [(version: String, variant: String, outcome: DeliveryFigure, count: Int)] {
        try Row.fetchAll(
            db, sql: "SELECT version, variant, outcome, count FROM experiment_sends WHERE campaign_key = ?", arguments: [campaign]
        ).map { row in
            let text: String = row["outcome"]
            guard let figure = DeliveryFigure(rawValue: text) else {
                throw DatabaseError(message: "experiment_sends.outcome: unknown figure \(text)")
            }
            return (row["version"], row["variant"], figure, row["count"])
        }
    }

    /// Deletes the counts of one version last changed before `cutoff`; returns how many rows went.
    func prune(campaign: String, version: String, before cutoff: Date) throws -> Int {
        try db.execute(
            sql: "DELETE FROM experiment_sends WHERE campaign_key = ? AND version = ? AND updated_at < ?", arguments: [campaign, version, WireTime.format(cutoff)])
        return db.changesCount
    }
}
