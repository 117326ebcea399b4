import Foundation
import GRDB
import Metrics
import Shared

/// An app's report on an in-app message (braze-rules §6, analytics): an impression is recorded for the profile (its
/// re-eligibility counts impressions across the profile's devices); impressions, clicks (of the body or a button) and
/// dismissals count in `herald_in_app_messages_total`. A report naming a message the project does not configure, or
/// a button the message does not have, counts nowhere (`herald_in_app_reports_ignored_total`): what an app key
/// reports never makes up a metric's labels.
struct InAppReports {
    let db: Database
    let write: Write
    let config: HeraldConfiguration

    static func ignored(_ reason: String) {
        Counter(label: "herald_in_app_reports_ignored_total", dimensions: [("reason", reason)]).increment()
    }

    func apply(_ report: InAppReport) throws {
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
    }
}
