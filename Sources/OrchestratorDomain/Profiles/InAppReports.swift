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
/// reports never makes up a metric's labels.
struct InAppReports {
    let db: Database
    let write: Write
    let config: HeraldConfiguration

    static func ignored(_ reason: String) {
        Counter(label: "herald_in_app_reports_ignored_total", dimensions: [("reason", reason)]).increment()
    }

    func apply(_ report: InAppReport, _ effects: inout WriteEffects) throws {
        guard let installationID = write.installationID else { return }
        let key = "\(write.project)/\(report.message)"
        guard let message = config.inAppMessages[key] else { return Self.ignored("unknown_message") }
        if let button = report.button, !message.buttons.contains(where: { $0.id == button }) {
            return Self.ignored("unknown_button")
        }
        if report.action == .impression {
            try InAppImpressionsTable(db).shown(write.profileKey, message: key, installationID: installationID, at: WireTime.format(report.time))
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
        delivery.profileKey = write.profileKey
        delivery.campaign = report.message
        delivery.action = report.button
        effects.output(PendingOutput(topic: HeraldTopic.deliveries.name, key: write.profileKey, value: try Wire.encode(delivery)))
    }
}
