import Foundation
import OrchestratorDomain
import Shared

/// A campaign's experiment report from the orchestrator's figures (`GET /v1/campaigns/{project}/{campaign}/experiment`):
/// one version's arms, each variant against the control group (`ExperimentStatistics`), and the sample-ratio check.
struct CampaignReport {
    struct Arm {
        var variant: String
        var assigned: Int
        /// Send targets the provider accepted (`sent` reports).
        var sent: Int
        var converted: Int
        var revenueUSD: Double
        var rate: Double { assigned > 0 ? Double(converted) / Double(assigned) : 0 }
        var comparison: ExperimentStatistics.Comparison?
        var adjustedP: Double?
    }

    var campaign: String
    var version: String
    var arms: [Arm]
    /// The sample-ratio check, when the version is the running one (its weights are known).
    var sampleRatio: (chiSquare: Double, degrees: Int, p: Double)?

    /// The p-value under which the split is called broken.
    static let mismatchThreshold = 0.001

    struct Invalid: Error, CustomStringConvertible { var description: String }

    init(figures: JSONValue, version wanted: String?) throws {
        campaign = figures["campaign"]?.stringValue ?? "?"
        let running = figures["version"]?.stringValue
        guard let version = wanted ?? running else { throw Invalid(description: "\(campaign) has no experiment and counts no conversion") }
        self.version = version
        func int(_ value: JSONValue?) -> Int { if case .number(let text)? = value { Int(text) ?? 0 } else { 0 } }
        func double(_ value: JSONValue?) -> Double { if case .number(let text)? = value { Double(text) ?? 0 } else { 0 } }
        guard case .array(let items)? = figures["arms"] else { throw Invalid(description: "no arms in the orchestrator's answer") }
        arms = items.filter { $0["version"]?.stringValue == version }.map { item in
            Arm(
                variant: item["variant"]?.stringValue ?? "?", assigned: int(item["assigned"]), sent: int(item["sends"]?["sent"]),
                converted: int(item["converted"]?[0]),
                revenueUSD: double(item["revenue_usd"]))
        }
        guard !arms.isEmpty else { throw Invalid(description: "no profile assigned in version \(version) of \(campaign) yet") }
        arms.sort { ($0.variant == Experiment.control ? "" : $0.variant) < ($1.variant == Experiment.control ? "" : $1.variant) }
        if let control = arms.first(where: { $0.variant == Experiment.control }) {
            for index in arms.indices where arms[index].variant != Experiment.control {
                arms[index].comparison = ExperimentStatistics.compare(
                    control: (control.converted, control.assigned), variant: (arms[index].converted, arms[index].assigned))
            }
            let tested = arms.indices.filter { arms[$0].comparison != nil }
            let adjusted = ExperimentStatistics.holm(tested.map { arms[$0].comparison!.p })
            for (index, p) in zip(tested, adjusted) { arms[index].adjustedP = p }
        }
        if version == running, case .object(let split)? = figures["split"] {
            let control = Double(int(split.first { $0.key == "control_basis_points" }?.value)) / 10_000
            var weights: [String: Double] = [:]
            if case .object(let variants)? = split.first(where: { $0.key == "variants" })?.value {
                let total = variants.reduce(0.0) { $0 + double($1.value) }
                for variant in variants { weights[variant.key] = (1 - control) * double(variant.value) / total }
            } else {
                weights[Experiment.message] = 1 - control
            }
            if control > 0 { weights[Experiment.control] = control }
            let names = weights.keys.sorted()
            if names.count > 1 {
                let observed = names.map { name in arms.first { $0.variant == name }?.assigned ?? 0 }
                sampleRatio = ExperimentStatistics.sampleRatio(observed: observed, weights: names.map { weights[$0]! })
            }
        }
    }

    var text: String {
        func percent(_ value: Double) -> String { String(format: "%.2f %%", value * 100) }
        func signed(_ value: Double) -> String { String(format: "%+.2f", value * 100) }
        var lines = ["campaign \(campaign) · experiment \(version)", ""]
        lines.append("variant     assigned      sent  converted      rate  revenue_usd  uplift (95 % interval, points)      p   p_holm")
        for arm in arms {
            var line = arm.variant.padding(toLength: 10, withPad: " ", startingAt: 0)
            let rate = percent(arm.rate)
            line += String(format: " %9d %9d %10d ", arm.assigned, arm.sent, arm.converted) + String(repeating: " ", count: max(0, 9 - rate.count)) + rate
            line += String(format: " %12.2f", arm.revenueUSD)
            if let comparison = arm.comparison {
                line += "  \(signed(comparison.difference)) (\(signed(comparison.low)) to \(signed(comparison.high)))"
                line += String(format: "  %.4f  %.4f", comparison.p, arm.adjustedP ?? comparison.p)
            } else if arm.variant != Experiment.control {
                line += "  -"
            }
            lines.append(line)
        }
        if let check = sampleRatio {
            lines.append("")
            let verdict = check.p < Self.mismatchThreshold
                ? "MISMATCH: the split is unlikely under the weights; do not read the uplift until it is explained"
                : "the split agrees with the weights"
            lines.append(String(format: "sample ratio: chi-squared %.3f, %d degrees, p %.4f: ", check.chiSquare, check.degrees, check.p) + verdict)
        }
        return lines.joined(separator: "\n")
    }

    var json: JSONValue {
        func number(_ value: Double) -> JSONValue { .number(JSONValue.literal(value)) }
        var members = [JSONMember("campaign", .string(campaign)), JSONMember("version", .string(version))]
        members.append(JSONMember("arms", .array(arms.map { arm in
            var fields = [
                JSONMember("variant", .string(arm.variant)), JSONMember("assigned", .number(String(arm.assigned))),
                JSONMember("sent", .number(String(arm.sent))),
                JSONMember("converted", .number(String(arm.converted))), JSONMember("rate", number(arm.rate)),
                JSONMember("revenue_usd", number(arm.revenueUSD)),
            ]
            if let comparison = arm.comparison {
                fields.append(JSONMember("uplift", .object([
                    JSONMember("difference", number(comparison.difference)), JSONMember("low", number(comparison.low)),
                    JSONMember("high", number(comparison.high)),
                    JSONMember("relative", comparison.relativeUplift.map(number) ?? .null),
                    JSONMember("p", number(comparison.p)), JSONMember("p_holm", number(arm.adjustedP ?? comparison.p)),
                ])))
            }
            return .object(fields)
        })))
        if let check = sampleRatio {
            members.append(JSONMember("sample_ratio", .object([
                JSONMember("chi_square", number(check.chiSquare)), JSONMember("degrees", .number(String(check.degrees))),
                JSONMember("p", number(check.p)), JSONMember("mismatch", .bool(check.p < Self.mismatchThreshold)),
            ])))
        }
        return .object(members)
    }
}
