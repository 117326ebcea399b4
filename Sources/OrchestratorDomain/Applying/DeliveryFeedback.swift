import Foundation
import GRDB
import Metrics
import PartitionStore
import Shared

/// A `herald.deliveries` report applied to the profile it is keyed by: last push date, dead tokens (and the `UNINSTALL`
/// events of the apps that track uninstalls), bounced addresses, marketing states changed by the recipient, the
/// frequency log, the pushes each installation received (which its opens are checked against); and, once per report,
/// its count for the send's experiment arm (`experiment_sends`). A report for a profile that is gone counts for the arm
/// and changes nothing else.
struct DeliveryFeedback {
    let db: Database

    /// The configuration (the apps that track uninstalls).
    let config: HeraldConfiguration

    /// What a report changed: whether the profile's reachability did, and the `UNINSTALL` events it recorded.
    struct Applied {
        var key: String
        var reachabilityChanged: Bool
        var uninstalls: [TriggerContext] = []
    }

    /// Returns what the report changed in its profile; nil when it is a replay or the profile is gone.
    func apply(_ report: DeliveryReport) throws -> Applied? {
        guard try firstTime(report) else { return nil }
        try countForExperiment(report)
        let key = report.key
        let profiles = ProfilesTable(db)
        guard try profiles.exists(key) else { return nil }
        try FrequencyCaps.settle(db, key: key, report: report)
        var reachabilityChanged = false
        var uninstalls: [TriggerContext] = []
        switch (report.channel, report.outcome) {
        case (.push, .sent) where report.campaign == UninstallTracking.campaign:
            break  // a probe: not a push the user saw (no last push date, nothing to open)
        case (.push, .sent):
            if let installationID = report.installationID {
                try InstallationsTable(db).markPushed(key, installationID, at: report.at)
                if let sendID = report.sendID {
                    try PushReceiptsTable(db).delivered(
                        key, sendID: sendID, installationID: installationID, campaign: report.campaign,
                        experiment: report.experiment, variant: report.variant, at: report.at)
                }
            }
        case (.push, .tokenInvalid):
            guard let token = report.token else { break }
            for installationID in try InstallationsTable(db).holders(key, token: token) {
                if let uninstall = try UninstallTracking(db: db, config: config).uninstalled(key: key, installationID: installationID, report: report) {
                    uninstalls.append(uninstall)
                }
                let removed = try InstallationWrites.removeToken(
                    db, key: key, installationID: installationID, token: token, at: report.at, change: "invalidated",
                    detail: report.reason)
                reachabilityChanged = reachabilityChanged || removed
            }
        case (.email, .bounced):
            // Only the address that bounced: a newer one set since is still good.
            reachabilityChanged = try profiles.markEmailBounced(key, address: report.address, at: report.at)
        case (.email, .unsubscribed), (.email, .subscribed), (.sms, .unsubscribed), (.sms, .subscribed):
            guard let channel = report.channel.message else { break }
            reachabilityChanged = try profiles.setMarketing(key, channel: channel, subscribed: report.outcome == .subscribed, at: report.at)
        default:
            break
        }
        return Applied(key: key, reachabilityChanged: reachabilityChanged, uninstalls: uninstalls)
    }

    /// An engagement report (an open, a click, a view, a dismissal): applied where it was made (the app's reports by
    /// `PushOpens`, `InAppReports`, `ContentCardReports`; the notifier's email and inbox opens need nothing more), it
    /// only counts, once: for its send's experiment arm, and an email's for its campaign on `/metrics`
    /// (`herald_campaign_engagements_total`, which `PushOpens` counts for push when it applies the app's report).
    func applyEngagement(_ report: DeliveryReport) throws {
        let email = report.channel == .email && report.campaign != nil
        guard report.experiment != nil || email, try firstTime(report) else { return }
        try countForExperiment(report)
        if email, let campaign = report.campaign {
            Counter(
                label: "herald_campaign_engagements_total",
                dimensions: [("campaign", "\(report.project)/\(campaign)"), ("channel", "email"), ("action", report.figure.rawValue)]
            ).increment()
        }
    }

    /// Reports have their own id space (a space cannot occur in a client's id): a replay is a no-op.
    private func firstTime(_ report: DeliveryReport) throws -> Bool {
        try RecordDedupe.firstTime(db, scope: report.project, id: "delivery \(report.id)", at: report.at)
    }

    /// A send of an experiment: its outcome (delivery, open, click) counts for its variant (the report's figures).
    private func countForExperiment(_ report: DeliveryReport) throws {
        guard let version = report.experiment, let variant = report.variant, let campaign = report.campaign, report.sendID != nil
        else { return }
        try ExperimentSendsTable(db).add(
            campaign: "\(report.project)/\(campaign)", version: version, variant: variant, outcome: report.figure,
            at: report.at)
    }
}
