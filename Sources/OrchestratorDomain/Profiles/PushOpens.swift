import Foundation
import GRDB
import Metrics
import PartitionStore
import Shared

/// An app's report that its user opened a notification, or pressed one of its buttons. It counts only for a push
/// delivered to that installation of the profile (`push_receipts`): a report naming another send, or a send of
/// another device, is ignored and counted (`herald_push_opens_ignored_total`), and so is a second open or button
/// press of the same push, so that an app key cannot inflate a campaign's figures. A counted one becomes an `opened` (or `clicked`) report on `herald.deliveries`, a
/// `herald_campaign_engagements_total` count, and a `push_open` trigger. A tap on a Push Story's page is a click,
/// counted by page (`herald_push_story_page_clicks_total`) when the page is one of the campaign's stories'.
struct PushOpens: EngagementReportApplier {
    typealias Ignored = IgnoredPushOpen
    static let ignoredMetric = MetricLabel(label: "herald_push_opens_ignored_total")
    let db: Database
    let write: Write
    let config: HeraldConfiguration

    func apply(_ open: PushOpenReport, _ effects: inout WriteEffects) throws {
        guard let installationID = write.installationID else { return }
        let key = write.profileKey
        guard let receipt = try PushReceiptsTable(db).receipt(key, sendID: open.sendID, installationID: installationID) else {
            return Self.ignored(.unknownSend)
        }
        let campaign = receipt.campaign
        let outcome: DeliveryReport.Outcome = open.action == nil && open.page == nil ? .opened : .clicked
        // Once per push and installation: a second open, or another button of the same push, counts nowhere (each
        // reported button would otherwise be a click of its own, and an app key could make any number).
        guard try PushReceiptsTable(db).firstEngagement(
            key, sendID: open.sendID, installationID: installationID, clicked: outcome == .clicked, at: open.time)
        else { return Self.ignored(.repeated) }
        var report = DeliveryReport(
            id: "\(open.sendID)/\(installationID)/\(outcome.rawValue)",
            sendID: open.sendID, project: write.project, customID: write.customID, installationID: installationID,
            channel: .push, outcome: outcome, at: open.time)
        report.targetID = installationID
        report.campaign = campaign.isEmpty ? nil : campaign
        report.action = open.action
        report.page = open.page
        report.experiment = receipt.experiment
        report.variant = receipt.variant
        try deliver(report, &effects)
        if !campaign.isEmpty {
            Counter(
                label: "herald_campaign_engagements_total",
                dimensions: [("campaign", "\(write.project)/\(campaign)"), ("channel", "push"), ("action", outcome.rawValue)]
            ).increment()
            // The page's label only for a page of the campaign's stories: an app key cannot make series.
            if let page = open.page, config.storyPageIDs(project: write.project, campaign: campaign).contains(page) {
                Counter(
                    label: "herald_push_story_page_clicks_total",
                    dimensions: [("campaign", "\(write.project)/\(campaign)"), ("page", page)]
                ).increment()
            }
        }
        var attributes = [JSONMember("campaign.s", .string(campaign))]
        if let action = open.action { attributes.append(JSONMember("action.s", .string(action))) }
        if let page = open.page { attributes.append(JSONMember("page.s", .string(page))) }
        if let app = write.app { attributes.append(JSONMember("app.s", .string(app))) }
        effects.appReported(.pushOpen, occurrence: "push_open \(report.id)", attributes: attributes)
    }
}
