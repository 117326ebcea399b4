import Metrics
import PartitionStore
import Shared

/// The skeleton of the appliers of an app's engagement reports (`PushOpens`, `InAppReports`, `ContentCardReports`): a
/// report that names what the profile or the project does not have, or that no real app could make, counts nowhere
/// but in the applier's own metric, by reason (what an app key reports never makes up a metric's labels); a counted
/// one goes on `herald.deliveries`, keyed by the profile that made it.
protocol EngagementReportApplier {
    associatedtype Ignored: RawRepresentable<String> & CaseIterable
    /// `herald_…_ignored_total{reason}`.
    static var ignoredMetric: MetricLabel { get }
    var write: Write { get }
}

extension EngagementReportApplier {
    static func ignored(_ reason: Ignored) {
        Counter(label: ignoredMetric.label, dimensions: [("reason", reason.rawValue)]).increment()
    }

    /// The counted report, on `herald.deliveries` with the profile's key.
    func deliver(_ report: DeliveryReport, _ effects: inout WriteEffects) throws {
        var report = report
        report.profileKey = write.profileKey
        effects.output(PendingOutput(topic: HeraldTopic.deliveries.name, key: write.profileKey, value: try Wire.encode(report)))
    }
}

/// A metric's name, spelled `label: "herald_…"` where it is defined, as every counter's is (the metric catalog's
/// conformance test finds the code's metrics by that spelling).
struct MetricLabel: Sendable {
    let label: String
}
