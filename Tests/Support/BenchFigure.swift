import Foundation

/// One benchmark figure as a line tools can read (`scripts/bench/all` collects them):
/// `figure=<name> value=<number> unit=<unit> ceiling=<number or -> ratio=<number or -> goal=<text>`.
package func printFigure(_ name: String, _ value: Double, unit: String, ceiling: Double? = nil, goal: String) {
    func number(_ value: Double) -> String {
        value >= 100 ? String(Int(value.rounded())) : String(format: "%.2f", value)
    }
    let ratio = ceiling.map { $0 > 0 ? String(format: "%.2f", value / $0) : "-" } ?? "-"
    print("figure=\(name) value=\(number(value)) unit=\(unit) ceiling=\(ceiling.map(number) ?? "-") ratio=\(ratio) goal=\(goal)")
}

/// The `p` quantile of `values` by the nearest rank below (index ⌊n·p⌋, the last for p = 1); NaN when there are none.
package func percentile(_ values: [Double], _ p: Double) -> Double {
    let sorted = values.sorted()
    return sorted.isEmpty ? .nan : sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))]
}
