import CoreMetrics
import Foundation
import Shared

/// The notifier's metrics on `/metrics`.
enum NotifierMetrics {
    static let duplicateSends = Counter(label: "herald_sends_duplicate_total")
    /// Inbox entries written (one per installation and one per custom ID a push reached) and purged by the retention.
    private static let inboxStored = Counter(label: "herald_inbox_entries_stored_total")
    private static let inboxPurged = Counter(label: "herald_inbox_entries_purged_total")
    static func storedInInbox() { inboxStored.increment() }
    static func purgedFromInbox(_ count: Int) { inboxPurged.increment(by: count) }

    /// Reasons are a closed set from Herald and the providers' error names; free text (transport messages) is folded.
    static func outcome(channel: MessageChannel, outcome: DeliveryReport.Outcome, reason: DeliveryReason?) {
        Counter(
            label: "herald_deliveries_total",
            dimensions: [("channel", channel.rawValue), ("outcome", outcome.rawValue), ("reason", reason?.label ?? "")]
        ).increment()
    }

    static func retries(channel: MessageChannel, reason: DeliveryReason) {
        Counter(label: "herald_delivery_retries_total", dimensions: [("channel", channel.rawValue), ("reason", reason.label)])
            .increment()
    }

    /// Trigger (or, after a campaign's delay, the time it was due) → provider acceptance, per channel and campaign
    /// (`<project>/<campaign>`, as the orchestrator's `herald_campaign_decisions_total` names it; a configured campaign,
    /// so the series are bounded by the configuration). Transactional pushes are `<project>/transactional`, whatever
    /// label their caller gave (it is in their reports and logs).
    static func latency(send: SendRequest, at: Date) {
        let seconds = latencySeconds(send: send, at: at)
        Timer(
            label: "herald_delivery_latency_seconds",
            dimensions: [("channel", send.channel.rawValue), ("campaign", campaignLabel(send))],
            preferredDisplayUnit: .seconds
        ).recordNanoseconds(Int64(seconds * 1e9))
    }

    static func campaignLabel(_ send: SendRequest) -> String {
        "\(send.project)/\(send.transactional == true ? "transactional" : send.campaign)"
    }

    static func latencySeconds(send: SendRequest, at: Date) -> Double {
        max(0, at.timeIntervalSince(send.dueAt ?? send.trigger.at))
    }
}
