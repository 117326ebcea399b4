import Foundation
import HeraldTestSupport
import ServiceSupport
import Testing

/// deploy/prometheus (the alert rules, their unit tests, a scrape configuration) and deploy/grafana (the dashboard),
/// judged by Prometheus' own `promtool` (scripts/setup.sh takes it from Debian's package into .venv), and held to the
/// metrics the services expose (`MetricCatalog`, which `MetricsConformanceTests` holds to the live expositions).
@Suite("Monitoring: alert rules and the dashboard")
struct MonitoringTests {
    static let rules = "deploy/prometheus/herald-alerts.yml"
    static let dashboard = "deploy/grafana/herald-dashboard.json"

    @Test("the alert rules pass promtool's check and their unit tests, where each alert fires and a near miss does not")
    func alertRules() async throws {
        let promtool = try promtoolPath()
        let (checked, checkOutput) = try await runCommand(promtool, ["check", "rules", repositoryFile(Self.rules)])
        #expect(checked == 0, "\(checkOutput)")
        let (tested, testOutput) = try await runCommand(
            promtool, ["test", "rules", repositoryFile("deploy/prometheus/herald-alerts.test.yml")])
        #expect(tested == 0 && testOutput.contains("SUCCESS"), "\(testOutput)")
        // Every alert has a unit test.
        let alerts = Set(try Self.matches(#"- alert: (\w+)"#, in: try Self.text(Self.rules)))
        let testedAlerts = Set(try Self.matches(#"alertname: (\w+)"#, in: try Self.text("deploy/prometheus/herald-alerts.test.yml")))
        #expect(alerts.count == 9 && alerts == testedAlerts, "alerts \(alerts.sorted()), tested \(testedAlerts.sorted())")
    }

    @Test("deploy/prometheus/prometheus.yml is a valid configuration that loads the rules and scrapes the three services")
    func scrapeConfiguration() async throws {
        let promtool = try promtoolPath()
        // promtool reads the files the configuration names: the rules, and the operator token beside it.
        let directory = try scratchDirectory("herald-prometheus")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        for file in ["prometheus.yml", "herald-alerts.yml"] {
            try FileManager.default.copyItem(atPath: repositoryFile("deploy/prometheus/\(file)"), toPath: "\(directory)/\(file)")
        }
        try Data("operator-token-0123456789\n".utf8).write(to: URL(fileURLWithPath: "\(directory)/herald-operator-token"))
        let (status, output) = try await runCommand(promtool, ["check", "config", "\(directory)/prometheus.yml"])
        #expect(status == 0 && output.contains("SUCCESS: 9 rules found"), "\(output)")
        let jobs = Set(try Self.matches(#"job_name: ([\w-]+)"#, in: try Self.text("deploy/prometheus/prometheus.yml")))
        #expect(jobs == ["herald-ingest", "herald-orchestrator", "herald-notifier"])
    }

    @Test("every metric the alert rules and the dashboard read is one the services expose")
    func metricsExist() throws {
        let exposed = Self.exposedNames()
        for (file, text) in [(Self.rules, try Self.text(Self.rules)), (Self.dashboard, try Self.dashboardQueries().joined(separator: "\n"))] {
            let used = Set(try Self.matches(#"\b((?:herald|http_server)_[a-z0-9_]+)"#, in: text))
            #expect(!used.isEmpty)
            #expect(used.subtracting(exposed).isEmpty, "\(file) reads metrics no service exposes: \(used.subtracting(exposed).sorted())")
        }
    }

    @Test("the dashboard's queries are PromQL promtool parses, each panel on the data source chosen")
    func dashboardQueries() async throws {
        let promtool = try promtoolPath()
        let queries = try Self.dashboardQueries()
        #expect(queries.count >= 20)
        // Grafana's variables as a query would have them, then each query as a recording rule for promtool to parse.
        var rules = "groups:\n  - name: dashboard\n    rules:\n"
        for (index, query) in queries.enumerated() {
            let expression = query.replacingOccurrences(of: "$__rate_interval", with: "5m")
                .replacingOccurrences(of: "$campaign", with: ".*")
            #expect(!expression.contains("$"), "an unknown variable in \(query)")
            let quoted = expression.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
            rules += "      - record: dashboard:query\(index)\n        expr: \"\(quoted)\"\n"
        }
        let directory = try scratchDirectory("herald-dashboard")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try Data(rules.utf8).write(to: URL(fileURLWithPath: "\(directory)/queries.yml"))
        let (status, output) = try await runCommand(promtool, ["check", "rules", "\(directory)/queries.yml"])
        #expect(status == 0, "\(output)")

        let dashboard = try Self.dashboardObject()
        let panels = try #require(dashboard["panels"] as? [[String: Any]])
        for panel in panels where panel["type"] as? String != "row" {
            let title = panel["title"] as? String ?? ""
            #expect(!title.isEmpty && !(panel["description"] as? String ?? "").isEmpty, "every panel says what it shows")
            #expect((panel["datasource"] as? [String: Any])?["uid"] as? String == "${datasource}", "\(title)")
            #expect(!((panel["targets"] as? [[String: Any]]) ?? []).isEmpty, "\(title)")
        }
    }

    @Test("the dashboard shows the figures an operator asks for first")
    func dashboardFigures() throws {
        let queries = try Self.dashboardQueries().joined(separator: "\n")
        for metric in [
            "herald_ingest_writes_total", "herald_ingest_rejections_total", "herald_consumer_lag", "herald_campaign_decisions_total",
            "herald_deliveries_total", "herald_delivery_latency_seconds_bucket", "herald_restore_lag", "herald_restore_seconds",
            "herald_partitions_paused", "herald_records_produced_total{topic=\"herald.dlq\"}", "herald_outbox_oldest_seconds",
            "herald_ready",
        ] {
            #expect(queries.contains(metric), "no panel reads \(metric)")
        }
        #expect(queries.contains("histogram_quantile(0.5, sum by (campaign, le)"))
        #expect(queries.contains("histogram_quantile(0.99, sum by (campaign, le)"))
    }

    // MARK: Helpers

    func promtoolPath() throws -> String {
        let promtool = repositoryFile(".venv/bin/promtool")
        try #require(FileManager.default.isExecutableFile(atPath: promtool), "run scripts/setup.sh: \(promtool) is missing")
        return promtool
    }

    /// The names a scrape of some service holds: each family, and a histogram's `_bucket`, `_sum` and `_count`.
    static func exposedNames() -> Set<String> {
        var names: Set<String> = []
        for family in MetricCatalog.all {
            names.insert(family.name)
            if family.kind.prometheusType == "histogram" {
                for suffix in ["_bucket", "_sum", "_count"] { names.insert(family.name + suffix) }
            }
        }
        return names
    }

    static func text(_ path: String) throws -> String {
        try String(contentsOfFile: repositoryFile(path), encoding: .utf8)
    }

    static func matches(_ pattern: String, in text: String) throws -> [String] {
        let regex = try NSRegularExpression(pattern: pattern)
        return regex.matches(in: text, range: NSRange(text.startIndex..., in: text)).compactMap { match in
            Range(match.range(at: 1), in: text).map { String(text[$0]) }
        }
    }

    static func dashboardObject() throws -> [String: Any] {
        let data = try Data(contentsOf: URL(fileURLWithPath: repositoryFile(dashboard)))
        return try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
    }

    /// Every panel target's query, and the template variables' queries' metrics (as PromQL selectors).
    static func dashboardQueries() throws -> [String] {
        let dashboard = try dashboardObject()
        let panels = (dashboard["panels"] as? [[String: Any]]) ?? []
        var queries = panels.flatMap { panel in
            ((panel["targets"] as? [[String: Any]]) ?? []).compactMap { $0["expr"] as? String }
        }
        let variables = ((dashboard["templating"] as? [String: Any])?["list"] as? [[String: Any]]) ?? []
        for variable in variables {
            guard let definition = variable["definition"] as? String else { continue }
            // label_values(metric, label): the metric, as a query.
            queries += try matches(#"label_values\(([a-z_:][a-z0-9_:]*)"#, in: definition)
        }
        return queries
    }
}
