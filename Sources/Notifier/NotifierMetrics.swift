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
    static func outcome(channel: MessageChannel, outcome: String, reason: String?) {
        Counter(
            label: "herald_deliveries_total",
            dimensions: [("channel", channel.rawValue), ("outcome", outcome), ("reason", label(reason))]
        ).increment()
    }

    static func retries(channel: MessageChannel, reason: String) {
        Counter(label: "herald_delivery_retries_total", dimensions: [("channel", channel.rawValue), ("reason", label(reason))])
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

    /// A reason as a label: its first word (`TooManyRequests`, `max_retry_attempts`, `transport`), or a protocol and
    /// its status code (`HTTP 503` → `http_503`, `smtp 421` → `smtp_421`, `sms 21610` → `sms_21610`).
    static func label(_ reason: String?) -> String {
        guard let reason else { return "" }
        if reason.hasPrefix("transport") { return "transport" }
        let words = reason.split(separator: " ", maxSplits: 2)
        if words.count >= 2, ["HTTP", "smtp", "sms"].contains(words[0]), words[1].allSatisfy(\.isNumber), words[1].count <= 6 {
            return "\(words[0].lowercased())_\(words[1])"
        }
        let head = reason.prefix { $0 != ":" && $0 != " " }
        return String(head.prefix(48))
    }
}
