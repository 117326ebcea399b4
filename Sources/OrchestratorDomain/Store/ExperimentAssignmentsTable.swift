import Foundation
import GRDB
import PartitionStore
import Shared

/// `experiment_assignments`: each profile's variant in each experiment version of a campaign (docs/measurement.md),
/// from the first decision that assigned it. The assignment itself is a hash (`ExperimentAssignment`): the row records
/// when, so that the control group, which gets nothing, is recorded too, and each assignment counts once however many
/// times its decision runs (a quiet-hours hold decides again when it ends).
struct ExperimentAssignmentsTable {
    let db: Database

    /// How long the assignments of a version no campaign runs any more are kept: the longest conversion window.
    static let window: TimeInterval = 90 * 86_400

    init(_ db: Database) { self.db = db }

    /// Records the assignment; false when the profile had it already.
    func record(_ key: String, campaign: String, version: String, variant: String, at time: Date) throws -> Bool {
        try db.executeCached(
            sql: """
                INSERT INTO experiment_assignments (profile_key, campaign_key, version, variant, assigned_at)
                VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING
                """, arguments: [key, campaign, version, variant, WireTime.format(time)])
        return db.changesCount == 1
    }

    /// The profile's assignments in a campaign (one per experiment version it was assigned in).
    func assignments(_ key: String, campaign: String) throws -> [(version: String, variant: String, at: Date)] {
        try Row.fetchAll(
            db.cachedStatement(sql: "SELECT version, variant, assigned_at FROM experiment_assignments WHERE profile_key = ? AND campaign_key = ?"),
            arguments: [key, campaign]
        ).map { ($0["version"], $0["variant"], try $0.requiredTime("assigned_at")) }
    }

    /// The campaign's profiles assigned, per experiment version and variant.
    func assignedByArm(campaign: String) throws -> [(version: String, variant: String, assigned: Int)] {
        try Row.fetchAll(
            db, sql: "SELECT version, variant, count(*) AS n FROM experiment_assignments WHERE campaign_key = ? GROUP BY version, variant",
            arguments: [campaign]
        ).map { ($0["version"], $0["variant"], $0["n"]) }
    }

    /// Every (campaign, version) the partition holds rows of: assignments, or send counts alone (their assignments
    /// pruned), in order.
    func heldVersions() throws -> [(campaign: String, version: String)] {
        try Row.fetchAll(
            db,
            sql: """
                SELECT campaign_key, version FROM experiment_assignments UNION SELECT campaign_key, version FROM experiment_sends
                ORDER BY 1, 2
                """
        ).map { ($0[0] as String, $0[1] as String) }
    }

    /// Deletes up to `limit` assignments of one version made before `cutoff`; returns how many.
    func prune(campaign: String, version: String, before cutoff: Date, limit: Int) throws -> Int {
        try db.execute(
            sql: """
                DELETE FROM experiment_assignments WHERE (profile_key, campaign_key, version) IN (
                    SELECT profile_key, campaign_key, version FROM experiment_assignments
                    WHERE campaign_key = ? AND version = ? AND assigned_at < ? LIMIT ?)
                """, arguments: [campaign, version, WireTime.format(cutoff), limit])
        return db.changesCount
    }
}
