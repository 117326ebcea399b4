import Foundation
import Shared

/// The journeys' table of `herald status` (docs/journeys.md, "Who is where"): per journey, the entries and how the
/// instances ended; per node, the arrivals (the branches taken) and the waits that timed out (counters since each
/// process started, as the rest of the board), and how many wait there now (the gauge of the instance asked); the
/// lists are `herald journey show`.
extension StatusReport {
    func journeyTable() -> [String] {
        let entries = "herald_journey_entries_total", nodes = "herald_journey_nodes_total"
        guard let orchestrator else { return [] }
        let journeys = Set(orchestrator.values(of: "journey", in: entries) + orchestrator.values(of: "journey", in: nodes))
        guard !journeys.isEmpty else { return [] }
        var rows = ["", "JOURNEY       ENTERED, ENDED · ARRIVALS PER NODE (timed out)"]
        for journey in journeys.sorted() {
            let refused = orchestrator.samples(entries, ["journey": journey])
                .filter { $0.labels["outcome"] != "entered" && $0.value > 0 }
                .map { "\($0.labels["outcome"] ?? "?") \(count($0.value))" }
            let ended = orchestrator.samples("herald_journey_ends_total", ["journey": journey]).filter { $0.value > 0 }
                .sorted { $0.value > $1.value }.map { "\($0.labels["reason"] ?? "?") \(count($0.value))" }
            rows.append(
                "\(journey)  entered \(count(orchestrator.sum(entries, ["journey": journey, "outcome": "entered"])))"
                    + (refused.isEmpty ? "" : " (not: \(refused.joined(separator: ", ")))")
                    + " · ended \(ended.isEmpty ? "0" : ended.joined(separator: ", "))")
            let arrivals = orchestrator.samples(nodes, ["journey": journey]).filter { $0.value > 0 }
                .sorted { $0.value > $1.value }
                .map { sample -> String in
                    let node = sample.labels["node"] ?? "?"
                    let timedOut = orchestrator.sum("herald_journey_timeouts_total", ["journey": journey, "node": node])
                    return "\(node) \(count(sample.value))" + (timedOut > 0 ? " (\(count(timedOut)))" : "")
                }
            if !arrivals.isEmpty { rows.append("              " + arrivals.joined(separator: ", ")) }
            let waiting = orchestrator.samples("herald_journey_waiting", ["journey": journey]).filter { $0.value > 0 }
                .sorted { $0.value > $1.value }.map { "\($0.labels["node"] ?? "?") \(count($0.value))" }
            if !waiting.isEmpty { rows.append("              waiting now: " + waiting.joined(separator: ", ")) }
        }
        return rows
    }
}
