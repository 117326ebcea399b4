import Foundation
import GRDB
import Metrics
import Shared

/// An event that may be a campaign's conversion (docs/measurement.md, "Conversions"): for each campaign that counts
/// it (its condition holding), and each of the profile's assignments in that campaign whose window the event falls in,
/// the conversion counts once for the assignment's variant (`herald_campaign_conversions_total`), and a purchase's
/// revenue adds up (`herald_campaign_revenue_usd_total`). Unless the conversion says `sources: any`, only the customer's
/// servers' writes convert. The window starts at the assignment, for the control group
/// and the variants alike (intention to treat: a send held by quiet hours or a cap is still its variant's), so the
/// arms are compared over the same time.
struct CampaignConversions {
    let db: Database
    let rules: EngagementRules

    /// The name of a campaign's assignment when it has no experiment: every profile it decided for.
    static let noExperiment = "none"

    func eventHappened(key: String, _ context: TriggerContext) throws {
        guard let name = context.eventName else { return }
        let project = ProfileKey.project(of: key)
        let candidates = rules.conversionCampaigns["\(project)/\(name)"] ?? []
        guard !candidates.isEmpty else { return }
        // Revenue is a purchase's own (price × quantity at the project's rate), never an attribute a custom event
        // carries: an app key once sent `revenue_usd: 9e18` and bought an experiment's result.
        let revenue = context.revenueUSD ?? 0
        for (campaign, index) in candidates {
            let conversion = campaign.conversions[index]
            if conversion.sources == .server, !context.fromServer { continue }
            if let condition = conversion.condition {
                let holds = condition.matches(at: context.at) { path in context.value(path.namespace, path.names.joined(separator: ".")) }
                guard holds else { continue }
            }
            for assignment in try ExperimentAssignmentsTable(db).assignments(key, campaign: campaign.key) {
                let start = assignment.at
                guard context.at >= start,
                    context.at.timeIntervalSince(start) <= conversion.window
                else { continue }
                let first = try CampaignConversionsTable(db).add(
                    key, campaign: campaign.key, version: assignment.version, conversion: index, variant: assignment.variant, at: context.at,
                    revenueUSD: revenue)
                let dimensions = [("campaign", campaign.key), ("version", assignment.version), ("variant", assignment.variant)]
                if first {
                    Counter(label: "herald_campaign_conversions_total", dimensions: dimensions + [("conversion", String(index))]).increment()
                }
                if revenue != 0 {
                    FloatingPointCounter(label: "herald_campaign_revenue_usd_total", dimensions: dimensions).increment(by: revenue)
                }
            }
        }
    }
}
