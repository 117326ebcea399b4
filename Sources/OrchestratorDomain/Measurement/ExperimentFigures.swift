import Foundation
import GRDB
import Shared

/// A campaign's experiment figures in some partitions (docs/measurement.md, "The report"): per experiment version and
/// variant, the profiles assigned and, per conversion, the profiles converted, the qualifying events and their revenue.
/// Figures of different partitions and instances add up (`adding`), so the report is exact however the partitions are
/// spread.
package struct ExperimentFigures: Codable, Sendable, Equatable {
    package struct Arm: Codable, Sendable, Equatable {
        package var version: String
        package var variant: String
        package var assigned: Int
        /// Per conversion (its index in the campaign's list).
        package var converted: [Int]
        package var events: [Int]
        package var revenueUSD: Double
        /// The arm's send targets by figure (`sent`, `failed`, `suppressed`, …, `opened`, `clicked_machine`), from
        /// the notifier's reports.
        package var sends: [DeliveryFigure: Int] = [:]

        enum CodingKeys: String, CodingKey {
            case version, variant, assigned, converted, events, sends
            case revenueUSD = "revenue_usd"
        }

        package init(version: String, variant: String, assigned: Int, converted: [Int], events: [Int], revenueUSD: Double) {
            self.version = version
            self.variant = variant
            self.assigned = assigned
            self.converted = converted
            self.events = events
            self.revenueUSD = revenueUSD
        }
    }

    /// By version, then variant.
    package var arms: [Arm]

    package init(arms: [Arm]) { self.arms = arms.sorted { ($0.version, $0.variant) < ($1.version, $1.variant) } }

    /// The campaign's figures in one partition database; `conversions`: how many the campaign counts.
    package static func read(_ db: Database, campaign: String, conversions: Int) throws -> ExperimentFigures {
        var arms: [String: Arm] = [:]
        func arm(_ version: String, _ variant: String) -> Arm {
            arms["\(version)\n\(variant)"] ?? Arm(
                version: version, variant: variant, assigned: 0, converted: Array(repeating: 0, count: conversions),
                events: Array(repeating: 0, count: conversions), revenueUSD: 0)
        }
        for row in try ExperimentAssignmentsTable(db).assignedByArm(campaign: campaign) {
            var entry = arm(row.version, row.variant)
            entry.assigned = row.assigned
            arms["\(entry.version)\n\(entry.variant)"] = entry
        }
        for row in try CampaignConversionsTable(db).figures(campaign: campaign) {
            // A conversion the campaign no longer counts (or an index no row should hold) is left out.
            guard row.conversion >= 0, row.conversion < conversions else { continue }
            var entry = arm(row.version, row.variant)
            entry.converted[row.conversion] += row.converted
            entry.events[row.conversion] += row.events
            entry.revenueUSD += row.revenueUSD
            arms["\(entry.version)\n\(entry.variant)"] = entry
        }
        for (version, variant, outcome, count) in try ExperimentSendsTable(db).counts(campaign: campaign) {
            var entry = arm(version, variant)
            entry.sends[outcome, default: 0] += count
            arms["\(entry.version)\n\(entry.variant)"] = entry
        }
        return ExperimentFigures(arms: Array(arms.values))
    }

    /// Both sets of figures summed, arm by arm.
    package func adding(_ other: ExperimentFigures) -> ExperimentFigures {
        var sums: [String: Arm] = [:]
        for arm in arms + other.arms {
            let key = "\(arm.version)\n\(arm.variant)"
            guard var sum = sums[key] else {
                sums[key] = arm
                continue
            }
            sum.assigned += arm.assigned
            sum.converted = zip(sum.converted, arm.converted).map(+)
            sum.events = zip(sum.events, arm.events).map(+)
            sum.revenueUSD += arm.revenueUSD
            sum.sends.merge(arm.sends, uniquingKeysWith: +)
            sums[key] = sum
        }
        return ExperimentFigures(arms: Array(sums.values))
    }
}
