import ArgumentParser
import Foundation
import Shared

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// One screen from the three services' `/metrics`: what was ingested, what the orchestrator and the notifier
/// processed (lag, dead letters), which campaigns fired and what each channel delivered, with the ingest → provider
/// latency per campaign. Counts are since each process started (Prometheus counters); with several instances of a
/// service, point it at one or read the same metrics in Prometheus.
struct StatusCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status",
        abstract: "What Herald ingested, decided and delivered, from the services' /metrics.",
        discussion: """
            Reads GET /metrics of one ingest, one orchestrator and one notifier (default: the ports of `make run`). \
            A service that does not answer is shown as down; the others are still shown. Exit status 1 when none \
            answers.
            """)

    @Option(help: "The ingest's base URL.")
    var ingest = "http://127.0.0.1:8080"

    @Option(help: "The orchestrator's base URL.")
    var orchestrator = "http://127.0.0.1:8081"

    @Option(help: "The notifier's base URL.")
    var notifier = "http://127.0.0.1:8082"

    @Option(help: "Redraw every N seconds until Ctrl-C (clears the terminal).")
    var watch: Double?

    @Option(help: "A line to print under the tables (repeatable), e.g. commands to look deeper.")
    var hint: [String] = []

    func validate() throws {
        if let watch, !(watch >= 1) { throw ValidationError("--watch: at least 1 second") }
    }

    func run() async throws {
        guard let watch else {
            let (board, anyUp) = await render()
            print(board, terminator: "")
            if !anyUp { throw ExitCode(1) }
            return
        }
        while !Task.isCancelled {
            let (board, _) = await render()
            FileHandle.standardOutput.write(Data(("\u{1B}[H\u{1B}[2J" + board).utf8))
            try await Task.sleep(for: .seconds(watch))
        }
    }

    func render() async -> (String, Bool) {
        async let ingestText = Self.fetch(ingest)
        async let orchestratorText = Self.fetch(orchestrator)
        async let notifierText = Self.fetch(notifier)
        let report = StatusReport(
            ingest: await ingestText.map(MetricsText.init), orchestrator: await orchestratorText.map(MetricsText.init),
            notifier: await notifierText.map(MetricsText.init))
        let stamp = WireTime.format(Date())
        var lines = [
            "Herald at \(stamp) · "
                + [("ingest", ingest, report.ingest), ("orchestrator", orchestrator, report.orchestrator), ("notifier", notifier, report.notifier)]
                .map { "\($0.0) \($0.1) \($0.2 == nil ? "DOWN" : "up")" }.joined(separator: " · "),
            "",
        ]
        lines += report.lines()
        if !hint.isEmpty { lines += [""] + hint }
        return (lines.joined(separator: "\n") + "\n", report.anyUp)
    }

    static func fetch(_ base: String) async -> String? {
        guard let url = URL(string: base.hasSuffix("/") ? base + "metrics" : base + "/metrics") else { return nil }
        var request = URLRequest(url: url)
        request.timeoutInterval = 3
        // Behind the services' operator token when they have one.
        if let token = ProcessInfo.processInfo.environment["HERALD_OPERATOR_TOKEN"], !token.isEmpty {
            request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization")
        }
        guard let (data, response) = try? await URLSession.shared.data(for: request),
            (response as? HTTPURLResponse)?.statusCode == 200
        else { return nil }
        return String(decoding: data, as: UTF8.self)
    }
}

/// The tables of `herald status`, from the services' metrics (nil: the service did not answer).
struct StatusReport {
    var ingest: MetricsText?
    var orchestrator: MetricsText?
    var notifier: MetricsText?

    var anyUp: Bool { ingest != nil || orchestrator != nil || notifier != nil }

    func lines() -> [String] {
        var lines: [String] = []
        if let ingest {
            let accepted = ingest.samples("herald_ingest_writes_total", ["outcome": "accepted"])
            var byOp: [String: Double] = [:]
            for sample in accepted where sample.value > 0 { byOp[sample.labels["op"] ?? "?", default: 0] += sample.value }
            let ops = byOp.sorted { $0.value > $1.value }.map { "\($0.key) \(count($0.value))" }
            lines.append("INGESTED      \(count(byOp.values.reduce(0, +))) writes" + (ops.isEmpty ? "" : " (\(ops.joined(separator: ", ")))"))
            let rejected = ingest.samples("herald_ingest_rejections_total").filter { $0.value > 0 }
                .sorted { $0.value > $1.value }.prefix(4).map { "\($0.labels["code"] ?? "?") \(count($0.value))" }
            lines.append(
                "              rejected \(count(ingest.sum("herald_ingest_rejections_total")))"
                    + (rejected.isEmpty ? "" : " (\(rejected.joined(separator: ", ")))")
                    + " · broker unavailable \(count(ingest.sum("herald_ingest_writes_total", ["outcome": "unavailable"])))")
        }
        var processed: [String] = []
        for (name, metrics) in [("orchestrator", orchestrator), ("notifier", notifier)] {
            guard let metrics else { continue }
            processed.append(
                "\(name) \(count(metrics.sum("herald_records_consumed_total"))) records, lag \(count(metrics.sum("herald_consumer_lag")))")
        }
        if !processed.isEmpty {
            let letters = [orchestrator, notifier].reduce(0.0) {
                $0 + ($1?.sum("herald_records_produced_total", ["topic": HeraldTopic.dlq.name]) ?? 0)
            }
            lines.append("PROCESSED     \(processed.joined(separator: " · ")) · dead letters \(count(letters))")
        }
        if let orchestrator {
            lines.append(
                "SEGMENTS      \(count(orchestrator.sum("herald_segment_transitions_total", ["direction": "entry"]))) entries, "
                    + "\(count(orchestrator.sum("herald_segment_transitions_total", ["direction": "exit"]))) exits, "
                    + "\(count(orchestrator.sum("herald_segment_evaluations_total"))) evaluations")
        }
        lines += campaignTable()
        lines += journeyTable()
        lines += storyTable()
        lines += inAppTable()
        lines += cardTable()
        if let held = heldLine(now: Date()) { lines += ["", held] }
        lines += channelTable()
        lines += webhookTable()
        if let rights = dataRightsLine() { lines += ["", rights] }
        return lines
    }

    /// Erasures applied, and the addresses the suppression lists hold (docs/data-rights.md).
    func dataRightsLine() -> String? {
        guard orchestrator != nil || notifier != nil else { return nil }
        var parts: [String] = []
        if let orchestrator { parts.append("\(count(orchestrator.sum("herald_erasures_total"))) erased") }
        if let notifier {
            parts.append(
                "suppressed: \(count(notifier.sum("herald_suppressed_addresses", ["channel": "email"]))) email, "
                    + "\(count(notifier.sum("herald_suppressed_addresses", ["channel": "sms"]))) sms")
        }
        return "DATA RIGHTS   " + parts.joined(separator: " · ")
    }

    /// Per webhook endpoint: its calls by status class, and whether a 410 disabled it.
    func webhookTable() -> [String] {
        let attempts = "herald_webhook_attempts_total"
        let endpoints = Set((notifier?.values(of: "endpoint", in: attempts) ?? []) + (notifier?.values(of: "endpoint", in: "herald_webhook_endpoint_disabled") ?? []))
        guard let notifier, !endpoints.isEmpty else { return [] }
        let width = max(endpoints.map(\.count).max() ?? 0, 16)
        let statuses = ["2xx", "4xx", "410", "5xx", "none"]
        var rows = ["", "WEBHOOK ENDPOINT".column(width) + statuses.map { "  " + $0.uppercased().leftPad(7) }.joined() + "  STATE"]
        for endpoint in endpoints.sorted() {
            let disabled = notifier.sum("herald_webhook_endpoint_disabled", ["endpoint": endpoint]) > 0
            rows.append(
                endpoint.column(width) + statuses.map { "  " + count(notifier.sum(attempts, ["endpoint": endpoint, "status": $0])).leftPad(7) }.joined()
                    + (disabled ? "  disabled (herald webhook replay \(endpoint))" : "  enabled"))
        }
        return rows
    }

    /// The sends quiet hours hold now, and when the first goes (each when the window ends in its recipient's zone).
    func heldLine(now: Date) -> String? {
        guard let orchestrator else { return nil }
        let held = orchestrator.sum("herald_quiet_window_held")
        guard held > 0 else { return nil }
        var line = "HELD          \(count(held)) send\(held == 1 ? "" : "s") in the recipients' quiet hours"
        let next = orchestrator.samples("herald_quiet_window_next_release_timestamp_seconds").map(\.value).filter { $0 > 0 }.min()
        if let next {
            let at = Date(timeIntervalSince1970: next)
            let minutes = Int(min(max(0, at.timeIntervalSince(now) / 60), 1e9))
            let clock = WireTime.format(at).dropFirst(11).prefix(5)
            line += " · the first goes at \(clock) UTC (in \(minutes / 60)h \(String(format: "%02d", minutes % 60))m), each when its window ends"
        }
        return line
    }

    /// Per campaign: sends decided, the other decisions, provider acceptances and their latency.
    func campaignTable() -> [String] {
        let decisions = "herald_campaign_decisions_total"
        let latency = "herald_delivery_latency_seconds"
        let campaigns = Set((orchestrator?.values(of: "campaign", in: decisions) ?? []) + (notifier?.values(of: "campaign", in: latency + "_count") ?? []))
        guard !campaigns.isEmpty else { return ["", "CAMPAIGNS     none decided yet"] }
        let width = max(campaigns.map(\.count).max() ?? 0, 8)
        var rows = [
            "",
            "\("CAMPAIGN".column(width))  \("SENT".leftPad(7))  \("OTHER DECISIONS".column(34))  \("DELIVERED".leftPad(9))  \("P50".leftPad(8))  \("P99".leftPad(8))  \("OPENED".leftPad(7))  \("CLICKED".leftPad(7))  \("CONVERTED".leftPad(9))",
        ]
        for campaign in campaigns.sorted() {
            let sent = orchestrator?.sum(decisions, ["campaign": campaign, "outcome": DecisionOutcome.sent.rawValue]) ?? 0
            let others = (orchestrator?.samples(decisions, ["campaign": campaign]) ?? [])
                .filter { $0.labels["outcome"] != DecisionOutcome.sent.rawValue && $0.value > 0 }
                .sorted { $0.value > $1.value }
                .map { "\($0.labels["outcome"] ?? "?") \(count($0.value))" }
            let delivered = notifier?.sum(latency + "_count", ["campaign": campaign]) ?? 0
            let p50 = notifier?.quantile(0.5, histogram: latency, ["campaign": campaign])
            let p99 = notifier?.quantile(0.99, histogram: latency, ["campaign": campaign])
            // Each send target's first open and click by its recipient (push and email; machines' apart, not shown), and
            // the profiles that reached the campaign's first conversion.
            let engaged = { (action: String) in orchestrator?.sum("herald_campaign_engagements_total", ["campaign": campaign, "action": action]) ?? 0 }
            let converted = orchestrator?.sum("herald_campaign_conversions_total", ["campaign": campaign, "conversion": "0"]) ?? 0
            rows.append(
                "\(campaign.column(width))  \(count(sent).leftPad(7))  \(others.joined(separator: ", ").column(34))  "
                    + "\(count(delivered).leftPad(9))  \(seconds(p50).leftPad(8))  \(seconds(p99).leftPad(8))  "
                    + "\(count(engaged("opened")).leftPad(7))  \(count(engaged("clicked")).leftPad(7))  \(count(converted).leftPad(9))")
        }
        return rows
    }

    /// Per campaign with Push Stories: the taps on each page (the push's first click on each installation).
    func storyTable() -> [String] {
        let clicks = "herald_push_story_page_clicks_total"
        let campaigns = Set(orchestrator?.values(of: "campaign", in: clicks) ?? [])
        guard let orchestrator, !campaigns.isEmpty else { return [] }
        let width = max(campaigns.map(\.count).max() ?? 0, 8)
        var rows = ["", "\("STORY".column(width))  PAGE TAPS"]
        for campaign in campaigns.sorted() {
            let pages = orchestrator.samples(clicks, ["campaign": campaign])
                .sorted { ($0.labels["page"] ?? "") < ($1.labels["page"] ?? "") }
                .map { "\($0.labels["page"] ?? "?") \(count($0.value))" }
            rows.append("\(campaign.column(width))  \(pages.joined(separator: ", "))")
        }
        return rows
    }

    /// Per in-app message: what the apps reported showing, clicks (of the body or a button) and dismissals.
    func inAppTable() -> [String] {
        let reports = "herald_in_app_messages_total"
        let messages = Set(orchestrator?.values(of: "message", in: reports) ?? [])
        guard let orchestrator, !messages.isEmpty else { return [] }
        let width = max(messages.map(\.count).max() ?? 0, 8)
        var rows = ["", "\("IN-APP".column(width))  \("SHOWN".leftPad(7))  \("CLICKED".leftPad(7))  \("DISMISSED".leftPad(9))"]
        for message in messages.sorted() {
            let sum = { (action: String) in orchestrator.sum(reports, ["message": message, "action": action]) }
            rows.append(
                "\(message.column(width))  \(count(sum("impression")).leftPad(7))  "
                    + "\(count(sum("click") + sum("button_click")).leftPad(7))  \(count(sum("dismiss")).leftPad(9))")
        }
        return rows
    }

    /// Per content card: delivered into feeds, viewed, clicked, dismissed (each once per user), and not delivered
    /// because the feed was full.
    func cardTable() -> [String] {
        let events = "herald_content_cards_total"
        let cards = Set(orchestrator?.values(of: "card", in: events) ?? [])
        guard let orchestrator, !cards.isEmpty else { return [] }
        let width = max(cards.map(\.count).max() ?? 0, 8)
        let columns = ["delivered", "viewed", "clicked", "dismissed", "capped"]
        var rows = ["", "CARD".column(width) + columns.map { "  " + $0.uppercased().leftPad(9) }.joined()]
        for card in cards.sorted() {
            rows.append(card.column(width) + columns.map { "  " + count(orchestrator.sum(events, ["card": card, "event": $0])).leftPad(9) }.joined())
        }
        return rows
    }

    /// Per channel: provider outcomes with the commonest reasons, and retries.
    func channelTable() -> [String] {
        guard let notifier else { return [] }
        let deliveries = "herald_deliveries_total"
        var rows = [
            "",
            "CHANNEL  \("SENT".leftPad(7))  \("FAILED".leftPad(7))  \("SUPPRESSED".leftPad(10))  \("RETRIES".leftPad(7))  REASONS",
        ]
        for channel in MessageChannel.allCases.map(\.rawValue) {
            let reasons = notifier.samples(deliveries, ["channel": channel])
                .filter { $0.labels["outcome"] != "sent" && !($0.labels["reason"] ?? "").isEmpty && $0.value > 0 }
                .sorted { $0.value > $1.value }.prefix(4)
                .map { "\($0.labels["reason"] ?? "?") \(count($0.value))" }
            rows.append(
                "\(channel.column(7))  \(count(notifier.sum(deliveries, ["channel": channel, "outcome": "sent"])).leftPad(7))  "
                    + "\(count(notifier.sum(deliveries, ["channel": channel, "outcome": "failed"])).leftPad(7))  "
                    + "\(count(notifier.sum(deliveries, ["channel": channel, "outcome": "suppressed"])).leftPad(10))  "
                    + "\(count(notifier.sum("herald_delivery_retries_total", ["channel": channel])).leftPad(7))  "
                    + reasons.joined(separator: ", "))
        }
        return rows
    }

    /// A count with thousands separators: 12,345.
    func count(_ value: Double) -> String {
        // A scrape is another process's text: a value past Int64 is written as it is rather than trap.
        guard value.isFinite, abs(value) < 9e18 else { return "\(value)" }
        let digits = String(Int64(value.rounded()))
        var out = ""
        for (index, digit) in digits.reversed().enumerated() {
            if index > 0, index % 3 == 0, digit != "-" { out.append(",") }
            out.append(digit)
        }
        return String(out.reversed())
    }

    /// `-`, `180 ms`, `1.2 s`, `2.5 min`.
    func seconds(_ value: Double?) -> String {
        guard let value else { return "-" }
        if value < 1, value.isFinite { return "\(Int((value * 1000).rounded())) ms" }
        if value < 60 { return String(format: "%.1f s", value) }
        return String(format: "%.1f min", value / 60)
    }
}

extension String {
    /// Right-aligned in a column of `width` characters.
    func leftPad(_ width: Int) -> String { count >= width ? self : String(repeating: " ", count: width - count) + self }
}
