/// What a delivery report counts as in a campaign's figures: its outcome, or, for an open or a click a machine made (a
/// mail privacy proxy, a link scanner), the machine's figure. The notifier's report carries the outcome and the flag
/// (`DeliveryReport`); the orchestrator stores the figure (`experiment_sends.outcome`) and labels
/// `herald_campaign_engagements_total` with it; the experiment endpoint answers with it (`ExperimentFigures.Arm.sends`);
/// `herald campaign report` reads it back.
package enum DeliveryFigure: String, Codable, CodingKeyRepresentable, Sendable, CaseIterable {
    case sent, failed, suppressed
    case tokenInvalid = "token_invalid"
    case bounced, unsubscribed, subscribed
    case opened, clicked, viewed, dismissed
    case openedMachine = "opened_machine"
    case clickedMachine = "clicked_machine"
    /// Webhooks: an attempt to be made again, a message parked while its endpoint is disabled.
    case retrying, parked

    /// The figure of an outcome; `machine`: made by a machine (meaningful for opens and clicks only).
    package init(_ outcome: DeliveryReport.Outcome, machine: Bool) {
        switch (outcome, machine) {
        case (.opened, true): self = .openedMachine
        case (.clicked, true): self = .clickedMachine
        case (.sent, _): self = .sent
        case (.failed, _): self = .failed
        case (.suppressed, _): self = .suppressed
        case (.tokenInvalid, _): self = .tokenInvalid
        case (.bounced, _): self = .bounced
        case (.unsubscribed, _): self = .unsubscribed
        case (.subscribed, _): self = .subscribed
        case (.opened, false): self = .opened
        case (.clicked, false): self = .clicked
        case (.viewed, _): self = .viewed
        case (.dismissed, _): self = .dismissed
        case (.retrying, _): self = .retrying
        case (.parked, _): self = .parked
        }
    }

    /// A send target tried: every delivery outcome but `suppressed` (nothing was sent).
    package static let tried: [DeliveryFigure] = [.sent, .failed, .tokenInvalid, .bounced]
}
