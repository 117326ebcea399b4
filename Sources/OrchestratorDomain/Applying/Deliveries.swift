import Foundation
import GRDB
import PartitionStore
import Shared

extension ProfileApplier {
    /// Applies a `herald.deliveries` report to the profile it is keyed by: last push date, dead tokens, bounced
    /// addresses, marketing states changed by the recipient, the frequency log. A report for a profile that is gone is a no-op.
    static func applyDelivery(_ db: Database, record: KafkaRecord) throws -> [PendingOutput] {
        guard let bytes = record.value else { return [deadLetter(record, reason: "a null value on herald.deliveries")] }
        let report: DeliveryReport
        do {
            report = try Wire.decode(DeliveryReport.self, from: bytes)
        } catch {
            return [deadLetter(record, reason: error.description)]
        }
        // Reports have their own id space (a space cannot occur in a client's id).
        guard try firstTime(db, project: report.project, id: "delivery \(report.id)", at: report.at) else { return [] }
        let key = report.key
        guard try ProfileEdits.exists(db, key: key) else { return [] }
        try settleFrequencyLog(db, key: key, report: report)
        let time = WireTime.format(report.at)
        var reachabilityChanged = false
        switch (report.channel, report.outcome) {
        case (.push, .sent):
            if let installationID = report.installationID {
                try db.executeCached(sql: """
                        UPDATE installations SET last_push_at = max(coalesce(last_push_at, ?), ?)
                        WHERE profile_key = ? AND installation_id = ?
                        """, arguments: [time, time, key, installationID])
            }
        case (.push, .tokenInvalid):
            guard let token = report.token else { break }
            let holders = try String.fetchAll(
                db, sql: "SELECT installation_id FROM installations WHERE profile_key = ? AND token = ?",
                arguments: [key, token])
            for installationID in holders {
                let removed = try Installations.removeToken(
                    db, key: key, installationID: installationID, token: token, at: time, change: "invalidated",
                    detail: report.reason)
                reachabilityChanged = reachabilityChanged || removed
            }
        case (.email, .bounced):
            // Only the address that bounced: a newer one set since is still good.
            try db.executeCached(sql: """
                    UPDATE profiles SET email_bounced_at = ?
                    WHERE profile_key = ? AND email IS NOT NULL AND (? IS NULL OR email = ?)
                    """, arguments: [time, key, report.address, report.address])
            reachabilityChanged = db.changesCount > 0
        case (.email, .unsubscribed), (.email, .subscribed), (.sms, .unsubscribed), (.sms, .subscribed):
            let column = report.channel == .email ? "email_marketing" : "sms_marketing"
            let state = report.outcome == .subscribed ? "subscribed" : "unsubscribed"
            try db.executeCached(sql: """
                    UPDATE profiles SET \(column) = ?, \(column)_changed_at = ?
                    WHERE profile_key = ? AND coalesce(\(column), '') != ?
                    """, arguments: [state, time, key, state])
            reachabilityChanged = db.changesCount > 0
        default:
            break
        }
        return reachabilityChanged ? [try ContactSnapshots.output(db, key: key)] : []
    }
}
