import Foundation
import GRDB
import PartitionStore
import Shared

/// `push_receipts`: the pushes delivered to each installation of a profile (from the notifier's `sent` reports), which
/// an app's report of a notification opened is checked against (`PushOpens`): an open of a send that was never
/// delivered to that installation counts nowhere, and each push counts one open and one button press at most. Kept
/// `retention` (docs/retention.md).
struct PushReceiptsTable {
    let db: Database

    /// How long a delivered push can be opened: APNs keeps a notification for at most 30 days.
    static let retention: TimeInterval = 30 * 86_400

    init(_ db: Database) { self.db = db }

    func delivered(
        _ key: String, sendID: String, installationID: String, campaign: String?, experiment: String?, variant: String?,
        at time: Date
    ) throws {
        try db.executeCached(
            sql: """
                INSERT OR IGNORE INTO push_receipts (profile_key, send_id, installation_id, campaign_key, experiment, variant, sent_at)
                VALUES (?, ?, ?, ?, ?, ?, ?)
                """, arguments: [key, sendID, installationID, campaign, experiment, variant, WireTime.format(time)])
    }

    /// A push delivered to an installation: its campaign (`""` for a send without one) and experiment arm.
    struct Receipt {
        var campaign: String
        var experiment: String?
        var variant: String?
    }

    /// The push delivered to the installation; nil when none was.
    func receipt(_ key: String, sendID: String, installationID: String) throws -> Receipt? {
        try Row.fetchOne(
            db.cachedStatement(
                sql: "SELECT campaign_key, experiment, variant FROM push_receipts WHERE profile_key = ? AND send_id = ? AND installation_id = ?"),
            arguments: [key, sendID, installationID]
        ).map { Receipt(campaign: $0["campaign_key"] as String? ?? "", experiment: $0["experiment"], variant: $0["variant"]) }
    }

    /// Records the push's first open (`clicked`: its first button press); false when it was recorded before, or the
    /// push was not delivered to the installation.
    func firstEngagement(_ key: String, sendID: String, installationID: String, clicked: Bool, at time: Date) throws -> Bool {
        let column = clicked ? "clicked_at" : "opened_at"
        try db.executeCached(
            sql: """
                UPDATE push_receipts SET \(column) = ?
                WHERE profile_key = ? AND send_id = ? AND installation_id = ? AND \(column) IS NULL
                """, arguments: [WireTime.format(time), key, sendID, installationID])
        return db.changesCount == 1
    }

    /// Deletes up to `limit` receipts older than `cutoff`; returns how many.
    func prune(before cutoff: Date, limit: Int) throws -> Int {
        try db.execute(
            sql: """
                DELETE FROM push_receipts WHERE (profile_key, send_id, installation_id) IN (
                    SELECT profile_key, send_id, installation_id FROM push_receipts WHERE sent_at < ? LIMIT ?)
                """, arguments: [WireTime.format(cutoff), limit])
        return db.changesCount
    }
}
