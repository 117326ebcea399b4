import Foundation
import OrchestratorDomain
import Shared

/// A campaign's experiment report from the orchestrator's figures (`GET /v1/campaigns/{project}/{campaign}/experiment`):
/// one version's arms, each variant against the control group (`ExperimentStatistics`), and the sample-ratio check.
struct CampaignReport {
    struct Arm {
        var variant: String
        var assigned: Int
        /// The arm's send targets by figure (`sent`, `failed`, …, `opened`, `clicked_machine`), from the reports on
        /// `herald.deliveries`.
        var sends: [DeliveryFigure: Int]
        var converted: Int
        var revenueUSD: Double
        var rate: Double { assigned > 0 ? Double(converted) / Double(assigned) : 0 }
        var comparison: ExperimentStatistics.Comparison?
        var adjustedP: Double?

        /// Send targets tried: every outcome but `suppressed` (nothing was sent).
        var sent: Int { DeliveryFigure.tried.reduce(0) { $0 + (sends[$1] ?? 0) } }
        /// Send targets the provider accepted.
        var delivered: Int { sends[.sent] ?? 0 }
        /// Targets opened, clicked, once each, by the recipient (`machine`: by a privacy proxy or a link scanner only).
        var opened: Int { sends[.opened] ?? 0 }
        var machineOpened: Int { sends[.openedMachine] ?? 0 }
        var clicked: Int { sends[.clicked] ?? 0 }
        var machineClicked: Int { sends[.clickedMachine] ?? 0 }
    }

    var campaign: String
    var version: String
    var arms: [Arm]
    /// The global holdout groups that held the campaign back (their own versions, `holdout:<id>:<basis points>`): what
    /// the campaign's conversions were without it.
    var holdouts: [Arm]
    /// The sample-ratio check, when the version is the running one (its weights are known).
    var sampleRatio: (chiSquare: Double, degrees: Int, p: Double)?
    /// What `converted` counts: the campaign's first conversion, its window and whose writes it counts.
    var conversion: (event: String, windowSeconds: Double, sources: Conversion.Sources)?

    /// The conversion in words: `PURCHASED within 1d, from the customer's servers only`.
    var conversionText: String? {
        guard let conversion else { return nil }
        let window = Int(exactly: conversion.windowSeconds / 86_400).map { "\($0)d" } ?? String(format: "%.0fs", conversion.windowSeconds)
        let sources = conversion.sources == .any
            ? "from any source, apps and web pages included (sources: any)"
            : "from the customer's servers' writes only (sources: server)"
        return "\(conversion.event) within \(window) of the assignment, \(sources)"
    }

    /// The p-value under which the split is called broken.
    static let mismatchThreshold = 0.001
    /// What a broken split means for the reader.
    static let mismatchAdvice = "the split is unlikely under the weights; do not read the uplift until it is explained"

    /// A rate as a percentage: `12.34 %`.
    static func percent(_ value: Double) -> String { String(format: "%.2f %%", value * 100) }

    struct Invalid: Error, CustomStringConvertible { var description: String }

    init(answer: ExperimentAnswer, version wanted: String?) throws {
        campaign = answer.campaign
        let running = answer.version
        guard let version = wanted ?? running else { throw Invalid(description: "\(campaign) has no experiment and counts no conversion") }
        self.version = version
        func arm(_ figures: ExperimentFigures.Arm) -> Arm {
            Arm(
                variant: figures.variant, assigned: figures.assigned, sends: figures.sends,
                converted: figures.converted.first ?? 0, revenueUSD: figures.revenueUSD)
        }
        if let first = answer.conversions.first { conversion = (first.event, first.windowSeconds, first.sources) }
        arms = answer.arms.filter { $0.version == version }.map(arm)
        holdouts = answer.arms.filter { HoldoutGroup.names($0.version) }.map(arm).sorted { $0.variant < $1.variant }
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
        if version == running, let split = answer.split {
            let shares = split.shares
            let names = shares.keys.sorted()
            if names.count > 1 {
                let observed = names.map { name in arms.first { $0.variant == name }?.assigned ?? 0 }
                sampleRatio = ExperimentStatistics.sampleRatio(observed: observed, weights: names.map { shares[$0]! })
            }
        }
    }

    var text: String {
        func signed(_ value: Double) -> String { String(format: "%+.2f", value * 100) }
        var lines = ["campaign \(campaign) · experiment \(version)"]
        if let conversionText { lines.append("converted: \(conversionText)") }
        lines.append("")
        func pad(_ text: String, _ width: Int) -> String { String(repeating: " ", count: max(0, width - text.count)) + text }
        lines.append(
            "variant     assigned      sent delivered  opened (machine)  clicked (machine)  converted      rate  revenue_usd"
                + "  uplift (95 % interval, points)      p   p_holm")
        for arm in arms + holdouts {
            var line = arm.variant.padding(toLength: 10, withPad: " ", startingAt: 0)
            line += String(format: " %9d %9d %9d %7d", arm.assigned, arm.sent, arm.delivered, arm.opened) + pad("(\(arm.machineOpened))", 10)
            line += String(format: " %8d", arm.clicked) + pad("(\(arm.machineClicked))", 10)
            line += String(format: " %10d ", arm.converted) + pad(Self.percent(arm.rate), 9)
            line += String(format: " %12.2f", arm.revenueUSD)
            if let comparison = arm.comparison {
                line += "  \(signed(comparison.difference)) (\(signed(comparison.low)) to \(signed(comparison.high)))"
                line += String(format: "  %.4f  %.4f", comparison.p, arm.adjustedP ?? comparison.p)
            } else if arm.variant != Experiment.control, !HoldoutGroup.names(arm.variant) {
                line += "  -"
            }
            lines.append(line)
        }
        if let check = sampleRatio {
            lines.append("")
            let verdict = check.p < Self.mismatchThreshold
                ? "MISMATCH: " + Self.mismatchAdvice
                : "the split agrees with the weights"
            lines.append(String(format: "sample ratio: chi-squared %.3f, %d degrees, p %.4f: ", check.chiSquare, check.degrees, check.p) + verdict)
        }
        return lines.joined(separator: "\n")
    }

    var json: JSONValue {
        func number(_ value: Double) -> JSONValue { .number(JSONValue.literal(value)) }
        var members = [JSONMember("campaign", .string(campaign)), JSONMember("version", .string(version))]
        if let conversion {
            members.append(JSONMember("conversion", .object([
                JSONMember("event", .string(conversion.event)), JSONMember("window_seconds", number(conversion.windowSeconds)),
                JSONMember("sources", .string(conversion.sources.rawValue)),
            ])))
        }
        func fields(_ arm: Arm) -> [JSONMember] {
            func count(_ value: Int) -> JSONValue { .number(String(value)) }
            return [
                JSONMember("variant", .string(arm.variant)), JSONMember("assigned", count(arm.assigned)),
                JSONMember("sent", count(arm.sent)), JSONMember("delivered", count(arm.delivered)),
                JSONMember("opened", count(arm.opened)), JSONMember("opened_machine", count(arm.machineOpened)),
                JSONMember("clicked", count(arm.clicked)), JSONMember("clicked_machine", count(arm.machineClicked)),
                JSONMember("converted", count(arm.converted)), JSONMember("rate", number(arm.rate)),
                JSONMember("revenue_usd", number(arm.revenueUSD)),
            ]
        }
        members.append(JSONMember("arms", .array(arms.map { arm in
            var fields = fields(arm)
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
        if !holdouts.isEmpty { members.append(JSONMember("holdouts", .array(holdouts.map { .object(fields($0)) }))) }
        if let check = sampleRatio {
            members.append(JSONMember("sample_ratio", .object([
                JSONMember("chi_square", number(check.chiSquare)), JSONMember("degrees", .number(String(check.degrees))),
                JSONMember("p", number(check.p)), JSONMember("mismatch", .bool(check.p < Self.mismatchThreshold)),
            ])))
        }
        return .object(members)
    }
}
