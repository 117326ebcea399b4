import Foundation
import Liquid
import OrchestratorDomain
import Shared

/// `herald campaign report --html`: the report as one self-contained page (inline CSS and SVG, no script, nothing
/// fetched) that a marketer can open or mail: a chart per figure, each arm a bar with its 95 % interval (the rates'
/// Wilson intervals, the uplifts' Wald intervals: `ExperimentStatistics`), then the table of every number, the
/// sample-ratio verdict and what the figures count.
struct CampaignReportPage {
    let report: CampaignReport

    /// One chart's bar: its arm, its value and interval, and the text printed beside it.
    struct Bar {
        var label: String
        var value: Double
        var interval: (low: Double, high: Double)?
        var text: String
    }

    var html: String {
        let arms = report.arms + report.holdouts
        func rates(_ part: (CampaignReport.Arm) -> Int, _ whole: (CampaignReport.Arm) -> Int) -> [Bar] {
            arms.compactMap { arm in
                let (n, k) = (whole(arm), part(arm))
                guard n > 0 else { return nil }
                return Bar(
                    label: arm.variant, value: Double(k) / Double(n), interval: ExperimentStatistics.wilson(k, of: n),
                    text: "\(CampaignReport.percent(Double(k) / Double(n))) (\(k) of \(n))")
            }
        }
        var sections = [
            chart("Conversion rate", "Profiles that reached the first conversion, of those assigned.", rates(\.converted, \.assigned)),
        ]
        let uplifts = report.arms.compactMap { arm in
            arm.comparison.map { comparison in
                Bar(
                    label: arm.variant, value: comparison.difference * 100, interval: (comparison.low * 100, comparison.high * 100),
                    text: String(format: "%+.2f points, p %.4f (Holm %.4f)", comparison.difference * 100, comparison.p, arm.adjustedP ?? comparison.p))
            }
        }
        if !uplifts.isEmpty {
            sections.append(chart("Uplift against control", "Each variant's conversion rate minus the control group's, in percentage points.", uplifts))
        }
        sections.append(chart("Open rate", "Deliveries opened by their recipient (machine opens left out), of those delivered.", rates(\.opened, \.delivered)))
        sections.append(chart("Click rate", "Deliveries clicked by their recipient (link scanners left out), of those delivered.", rates(\.clicked, \.delivered)))
        return """
            <!doctype html>
            <html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
            <title>\(Self.escape(report.campaign)) · experiment \(Self.escape(report.version))</title>
            <style>
            body{font:15px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;color:#1d2330;margin:2rem auto;max-width:60rem;padding:0 1rem}
            h1{font-size:1.5rem;margin-bottom:.2rem}h2{font-size:1.1rem;margin:2rem 0 .2rem}p.note{color:#5b6372;margin:.2rem 0 .6rem}
            .chart text{font-size:13px;fill:#1d2330}.chart .bar{fill:#4c78a8}.chart .bar.control{fill:#9aa3b2}.chart .bar.holdout{fill:#c9a227}
            .chart .whisker{stroke:#1d2330;stroke-width:1.5}.chart .axis{stroke:#c3c8d1}
            .numbers{overflow-x:auto;margin-top:1.5rem}table{border-collapse:collapse;font-size:.85rem}
            th,td{padding:.3rem .5rem;border-bottom:1px solid #e3e6eb;text-align:right;white-space:nowrap}
            th:first-child,td:first-child{text-align:left}.verdict{padding:.6rem .8rem;border-radius:4px;background:#eef5ee}
            .verdict.mismatch{background:#fbe9e7;font-weight:600}
            </style></head><body>
            <h1>\(Self.escape(report.campaign))</h1>
            <p class="note">Experiment \(Self.escape(report.version)) · bars show each figure with its 95 % interval.\(
                report.conversionText.map { " Converted: \(Self.escape($0))." } ?? "")</p>
            \(verdict)
            \(sections.joined(separator: "\n"))
            \(table(arms))
            <p class="note">What each figure counts, and the statistics: docs/measurement.md in Herald's repository.</p>
            </body></html>

            """
    }

    private var verdict: String {
        guard let check = report.sampleRatio else { return "" }
        let mismatch = check.p < CampaignReport.mismatchThreshold
        let text = mismatch
            ? "Sample ratio MISMATCH: " + CampaignReport.mismatchAdvice
            : "The split agrees with the weights"
        return "<p class=\"verdict\(mismatch ? " mismatch" : "")\">\(text) (chi-squared \(String(format: "%.3f", check.chiSquare)), "
            + "\(check.degrees) degrees, p \(String(format: "%.4f", check.p))).</p>"
    }

    /// A horizontal bar chart: one row per bar, the axis from the lowest to the highest end (0 included).
    private func chart(_ title: String, _ note: String, _ bars: [Bar]) -> String {
        guard !bars.isEmpty else {
            return "<section class=\"figure\"><h2>\(Self.escape(title))</h2><p class=\"note\">\(Self.escape(note)) Nothing to show yet.</p></section>"
        }
        let (labelWidth, plotWidth, textWidth, row) = (110.0, 420.0, 300.0, 30.0)
        let low = min(0, bars.map { $0.interval?.low ?? $0.value }.min() ?? 0)
        let high = max(bars.map { $0.interval?.high ?? $0.value }.max() ?? 0, low + 1e-9)
        func x(_ value: Double) -> Double { labelWidth + (value - low) / (high - low) * plotWidth }
        let height = Double(bars.count) * row + 10
        var shapes = ["<line class=\"axis\" x1=\"\(Self.number(x(0)))\" y1=\"0\" x2=\"\(Self.number(x(0)))\" y2=\"\(Self.number(height))\"/>"]
        for (index, bar) in bars.enumerated() {
            let y = Double(index) * row + 5
            let kind = bar.label == Experiment.control ? " control" : HoldoutGroup.names(bar.label) ? " holdout" : ""
            let start = min(x(0), x(bar.value)), width = max(abs(x(bar.value) - x(0)), 1)
            shapes.append("<text x=\"0\" y=\"\(Self.number(y + 15))\">\(Self.escape(bar.label))</text>")
            shapes.append(
                "<rect class=\"bar\(kind)\" data-arm=\"\(Self.escape(bar.label))\" x=\"\(Self.number(start))\" y=\"\(Self.number(y + 3))\" "
                    + "width=\"\(Self.number(width))\" height=\"16\"><title>\(Self.escape(bar.label)): \(Self.escape(bar.text))</title></rect>")
            if let interval = bar.interval {
                let (a, b, middle) = (x(interval.low), x(interval.high), y + 11)
                shapes.append(
                    "<path class=\"whisker\" d=\"M\(Self.number(a)) \(Self.number(middle))H\(Self.number(b))M\(Self.number(a)) \(Self.number(middle - 5))v10M\(Self.number(b)) \(Self.number(middle - 5))v10\"/>")
            }
            shapes.append("<text x=\"\(Self.number(labelWidth + plotWidth + 12))\" y=\"\(Self.number(y + 15))\">\(Self.escape(bar.text))</text>")
        }
        let width = labelWidth + plotWidth + textWidth
        return """
            <section class="figure"><h2>\(Self.escape(title))</h2><p class="note">\(Self.escape(note))</p>
            <svg class="chart" role="img" aria-label="\(Self.escape(title))" viewBox="0 0 \(Self.number(width)) \(Self.number(height))" width="100%">
            \(shapes.joined(separator: "\n"))
            </svg></section>
            """
    }

    private func table(_ arms: [CampaignReport.Arm]) -> String {
        let head = [
            "arm", "assigned", "sent", "delivered", "opened", "machine opens", "clicked", "machine clicks", "converted", "rate",
            "revenue (USD)", "uplift (points, 95 %)", "p (Holm)",
        ]
        var rows = ["<tr>" + head.map { "<th>\($0)</th>" }.joined() + "</tr>"]
        for arm in arms {
            var cells = [
                Self.escape(arm.variant), "\(arm.assigned)", "\(arm.sent)", "\(arm.delivered)", "\(arm.opened)", "\(arm.machineOpened)",
                "\(arm.clicked)", "\(arm.machineClicked)", "\(arm.converted)", CampaignReport.percent(arm.rate), String(format: "%.2f", arm.revenueUSD),
            ]
            if let comparison = arm.comparison {
                cells.append(String(format: "%+.2f (%+.2f to %+.2f)", comparison.difference * 100, comparison.low * 100, comparison.high * 100))
                cells.append(String(format: "%.4f", arm.adjustedP ?? comparison.p))
            } else {
                cells += ["", ""]
            }
            rows.append("<tr>" + cells.map { "<td>\($0)</td>" }.joined() + "</tr>")
        }
        return "<div class=\"numbers\"><table>\n" + rows.joined(separator: "\n") + "\n</table></div>"
    }

    static func number(_ value: Double) -> String { String(format: "%.1f", value) }

    static func escape(_ text: String) -> String { LiquidFilters.escapeHTML(text) }
}
