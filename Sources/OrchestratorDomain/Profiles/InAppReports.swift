import Foundation
import GRDB
import Metrics
import PartitionStore
import Shared

/// An app's report on an in-app message (braze-rules §6, analytics): an impression is recorded for the profile (its
/// re-eligibility counts impressions across the profile's devices); impressions, clicks (of the body or a button) and
/// dismissals count in `herald_in_app_messages_total` and become reports on `herald.deliveries` (channel `in_app`:
/// `viewed`, `clicked` with the button's id as `action`, `dismissed`; the message's id as `campaign`). A report naming a message the project does not configure, or
/// a button the message does not have, counts nowhere (`herald_in_app_reports_ignored_total`): what an app key
/// reports never makes up a metric's labels. Nor does a report no real app could make (`repeated`, `no_impression`):
/// one installation cannot inflate a message's figures past what showing it could.
struct InAppReports: EngagementReportApplier {
    typealias Ignored = IgnoredInAppReport
    static let ignoredMetric = MetricLabel(label: "herald_in_app_reports_ignored_total")
    let db: Database
    let write: Write
    let config: HeraldConfiguration

    func apply(_ report: InAppReport, _ effects: inout WriteEffects) throws {
        guard let installationID = write.installationID else { return }
        let key = "\(write.project)/\(report.message)"
        guard let message = config.inAppMessages[key] else { return Self.ignored(.unknownMessage) }
        if let button = report.button, !message.buttons.contains(where: { $0.id == button }) {
            return Self.ignored(.unknownButton)
        }
        // Each counts only as a real app could report it: an impression no sooner after the installation's last one
        // than the message's minimum trigger interval (at least a second); one click (of the body or a button) and one
        // dismissal per impression the installation reported before.
        let impressions = InAppImpressionsTable(db)
        switch report.action {
        case .impression:
            guard try impressions.shown(
                write.profileKey, message: key, installationID: installationID, at: report.time,
                spacing: max(message.minTriggerInterval, 1), kept: InAppMessageDefinition.keptImpressions)
            else { return Self.ignored(.repeated) }
        case .click:
            guard try impressions.mark(write.profileKey, message: key, installationID: installationID, .clicked) else {
                return Self.ignored(.noImpression)
            }
        case .dismiss:
            guard try impressions.mark(write.profileKey, message: key, installationID: installationID, .dismissed) else {
                return Self.ignored(.noImpression)
            }
        }
        Counter(
            label: "herald_in_app_messages_total",
            dimensions: [("message", key), ("action", report.button == nil ? report.action.rawValue : "button_click")]
        ).increment()
        let outcome: DeliveryReport.Outcome = switch report.action {
        case .impression: .viewed
        case .click: .clicked
        case .dismiss: .dismissed
        }
        var delivery = DeliveryReport(
            id: "\(write.id)/in_app/\(outcome.rawValue)", project: write.project, customID: write.customID,
            installationID: installationID, channel: .inApp, outcome: outcome, at: report.time)
        delivery.targetID = installationID
        delivery.campaign = report.message
        delivery.action = report.button
        try deliver(delivery, &effects)
    }
}
