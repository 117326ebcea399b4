import Foundation
import GRDB
import Logging
import Metrics
import PartitionStore
import Shared

/// An app's report on a card of the profile's feed (braze-rules 25): the first view, the first click and the
/// dismissal are the profile's, whichever of its devices reports them (a card dismissed on one device is gone from
/// all at their next sync), each counted once in `herald_content_cards_total` and reported once on `herald.deliveries`
/// (channel `content_card`: `viewed`, `clicked`, `dismissed`, with the card's id as `send_id`). A click counts only on a card with a
/// URL or an action (whose profile writes it then emits), a dismissal only on a dismissible card; a report naming a card the feed does not hold counts nowhere
/// (`herald_content_card_reports_ignored_total`): what an app key reports never makes up a metric's labels.
struct ContentCardReports: EngagementReportApplier {
    typealias Ignored = IgnoredCardReport
    static let ignoredMetric = MetricLabel(label: "herald_content_card_reports_ignored_total")
    let db: Database
    let write: Write
    let config: HeraldConfiguration

    func apply(_ report: CardReport, _ effects: inout WriteEffects) throws {
        let table = ContentCardsTable(db)
        let key = write.profileKey
        guard let card = try table.card(key, cardID: report.card), let definition = config.contentCards[card.cardKey] else {
            return Self.ignored(.unknownCard)
        }
        let mark: ContentCardsTable.Mark
        switch report.action {
        case .view: mark = .viewed
        case .click:
            guard card.texts["url"] != nil || definition.action != nil else { return Self.ignored(.noURL) }
            mark = .clicked
        case .dismiss:
            // The card as the feed shows it now (an edit may have made it dismissible, or not).
            guard definition.dismissible else { return Self.ignored(.notDismissible) }
            mark = .dismissed
        }
        guard try table.mark(key, cardID: report.card, mark, at: write.receivedAt) else { return Self.ignored(.repeated) }
        ContentCardDelivery.count(card.cardKey, mark == .viewed ? "viewed" : mark == .clicked ? "clicked" : "dismissed")
        let outcome: DeliveryReport.Outcome = switch mark {
        case .viewed: .viewed
        case .clicked: .clicked
        case .dismissed: .dismissed
        }
        var delivery = DeliveryReport(
            id: "\(report.card)/\(outcome.rawValue)", sendID: report.card, project: write.project, customID: write.customID,
            installationID: write.installationID, channel: .contentCard, outcome: outcome, at: report.time)
        let campaign = card.campaignKey.dropFirst(write.project.count + 1)
        delivery.campaign = campaign.isEmpty ? nil : String(campaign)
        try deliver(delivery, &effects)
        // The card's action writes to the profile (batch.user.tag, batch.user.event): once, at the counted click, as
        // the profile writes they stand for, validated as the app's own (docs/in-app.md, "Actions").
        if mark == .clicked, let action = definition.action {
            let (payloads, problems) = action.payloads(identified: write.customID != nil, path: "\(card.cardKey).action")
            for (index, payload) in payloads.enumerated() {
                effects.emitAsReporter(payload, suffix: "card-action \(index)")
            }
            if let problem = problems.first {
                Logger(label: "herald.cards").warning(
                    "a card's action wrote less than it says", metadata: ["card": "\(card.cardKey)", "problem": "\(problem.path): \(problem.message)"])
            }
        }
    }
}
