import CoreMetrics
import Prometheus

/// The swift-metrics backend of the services: swift-prometheus' registry, with each family's `HELP` text and buckets
/// from `MetricCatalog`, and the libraries' names made Prometheus' (`hb.requests` → `http_server_requests_total`).
/// swift-prometheus' own factory registers every family with an empty help text, and its registry refuses (traps on) a
/// second registration of a family with another help text, so help cannot be added beside it: it is given here, the
/// same for every series of a family.
package struct CatalogMetricsFactory: Sendable {
    package let registry: PrometheusCollectorRegistry

    package init(registry: PrometheusCollectorRegistry) {
        self.registry = registry
    }

    /// The Prometheus name and help of a swift-metrics label.
    private func described(_ label: String) -> MetricNameDescriptor {
        let name = MetricCatalog.renamed[label] ?? label
        return Self.descriptor(name, help: MetricCatalog.family(named: name)?.help ?? "")
    }

    /// A family's whole name as the descriptor's one part (its `name` joins the non-empty parts).
    private static func descriptor(_ name: String, help: String) -> MetricNameDescriptor {
        MetricNameDescriptor(metricName: name, unitName: "", helpText: help)
    }

    /// A family's buckets, or swift-prometheus' defaults for a family the catalog does not list.
    private func valueBuckets(_ name: String) -> [Double] {
        if case .histogram(let buckets) = MetricCatalog.family(named: name)?.kind { return buckets }
        return MetricCatalog.defaults.defaultValueHistogramBuckets
    }

    private func durationBuckets(_ name: String) -> [Duration] {
        if case .durations(let buckets) = MetricCatalog.family(named: name)?.kind { return buckets }
        return MetricCatalog.defaults.defaultDurationHistogramBuckets
    }

    /// Registers the service's zero series (`MetricCatalog.Family.zeroSeries`), so that they are exposed from the
    /// start with the value 0: an alert then tells "none yet" from "not exposed".
    package func registerZeroSeries(of service: MetricCatalog.Service) {
        for family in MetricCatalog.families(of: service) {
            let descriptor = Self.descriptor(family.name, help: family.help)
            for labels in family.zeroSeries {
                switch family.kind {
                case .counter: _ = registry.makeCounter(descriptor: descriptor, labels: labels)
                case .gauge: _ = registry.makeGauge(descriptor: descriptor, labels: labels)
                case .histogram(let buckets): _ = registry.makeValueHistogram(descriptor: descriptor, labels: labels, buckets: buckets)
                case .durations(let buckets): _ = registry.makeDurationHistogram(descriptor: descriptor, labels: labels, buckets: buckets)
                }
            }
        }
    }
}

extension CatalogMetricsFactory: CoreMetrics.MetricsFactory {
    package func makeCounter(label: String, dimensions: [(String, String)]) -> any CounterHandler {
        registry.makeCounter(descriptor: described(label), labels: dimensions)
    }

    package func makeFloatingPointCounter(label: String, dimensions: [(String, String)]) -> any FloatingPointCounterHandler {
        registry.makeCounter(descriptor: described(label), labels: dimensions)
    }

    package func makeRecorder(label: String, dimensions: [(String, String)], aggregate: Bool) -> any RecorderHandler {
        let descriptor = described(label)
        guard aggregate else { return registry.makeGauge(descriptor: descriptor, labels: dimensions) }
        return registry.makeValueHistogram(descriptor: descriptor, labels: dimensions, buckets: valueBuckets(descriptor.name))
    }

    package func makeMeter(label: String, dimensions: [(String, String)]) -> any MeterHandler {
        registry.makeGauge(descriptor: described(label), labels: dimensions)
    }

    package func makeTimer(label: String, dimensions: [(String, String)]) -> any TimerHandler {
        let descriptor = described(label)
        return registry.makeDurationHistogram(descriptor: descriptor, labels: dimensions, buckets: durationBuckets(descriptor.name))
    }

    package func destroyCounter(_ handler: any CounterHandler) {
        if let counter = handler as? Prometheus.Counter { registry.unregisterCounter(counter) }
    }

    package func destroyFloatingPointCounter(_ handler: any FloatingPointCounterHandler) {
        if let counter = handler as? Prometheus.Counter { registry.unregisterCounter(counter) }
    }

    package func destroyRecorder(_ handler: any RecorderHandler) {
        switch handler {
        case let gauge as Prometheus.Gauge: registry.unregisterGauge(gauge)
        case let histogram as Prometheus.ValueHistogram: registry.unregisterValueHistogram(histogram)
        default: break
        }
    }

    package func destroyMeter(_ handler: any MeterHandler) {
        if let gauge = handler as? Prometheus.Gauge { registry.unregisterGauge(gauge) }
    }

    package func destroyTimer(_ handler: any TimerHandler) {
        if let histogram = handler as? Prometheus.DurationHistogram { registry.unregisterDurationHistogram(histogram) }
    }
}
