import Foundation
import GRDB
import PartitionStore
import Shared

/// A `herald.deliveries` report applied to the profile it is keyed by: last push date, dead tokens, bounced addresses,
/// marketing states changed by the recipient, the frequency log, the pushes each installation received (which its
/// opens are checked against). A report for a profile that is gone is a no-op.
struct DeliveryFeedback {
    let db: Database

    /// Returns the profile whose reachability changed, if it did.
    func apply(_ report: DeliveryReport) throws -> (key: String, reachabilityChanged: Bool)? {
        // Reports have their own id space (a space cannot occur in a client's id).
        guard try RecordDedupe.firstTime(db, scope: report.project, id: "delivery \(report.id)", at: report.at) else { return nil }
        // A send of an experiment: its outcome counts for its variant (the report's figures).
        if let version = report.experiment, let variant = report.variant, let campaign = report.campaign, report.sendID != nil {
            try ExperimentSendsTable(db).add(
                campaign: "\(report.project)/\(campaign)", version: version, variant: variant, outcome: report.outcome.rawValue,
                at: WireTime.format(report.at))
        }
        let key = report.key
        let profiles = ProfilesTable(db)
        guard try profiles.exists(key) else { return nil }
        try FrequencyCaps.settle(db, key: key, report: report)
        let time = WireTime.format(report.at)
        var reachabilityChanged = false
        switch (report.channel, report.outcome) {
        case (.push, .sent):
            if let installationID = report.installationID {
                try InstallationsTable(db).markPushed(key, installationID, at: time)
                if let sendID = report.sendID {
                    try PushReceiptsTable(db).delivered(key, sendID: sendID, installationID: installationID, campaign: report.campaign, at: time)
                }
            }
        case (.push, .tokenInvalid):
            guard let token = report.token else { break }
            for installationID in try InstallationsTable(db).holders(key, token: token) {
                let removed = try InstallationWrites.removeToken(
                    db, key: key, installationID: installationID, token: token, at: time, change: "invalidated",
                    detail: report.reason)
                reachabilityChanged = reachabilityChanged || removed
            }
        case (.email, .bounced):
            // Only the address that bounced: a newer one set since is still good.
            reachabilityChanged = try profiles.markEmailBounced(key, address: report.address, at: time)
        case (.email, .unsubscribed), (.email, .subscribed), (.sms, .unsubscribed), (.sms, .subscribed):
            guard let channel = report.channel.message else { break }
            reachabilityChanged = try profiles.setMarketing(key, channel: channel, subscribed: report.outcome == .subscribed, at: time)
        default:
            break
        }
        return (key, reachabilityChanged)
    }
}
