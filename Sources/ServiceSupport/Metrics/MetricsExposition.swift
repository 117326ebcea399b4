import Prometheus

/// The body of `GET /metrics`: the registry's families in Prometheus' text format, then a `# HELP` and a `# TYPE` line
/// for each family of the service's catalog that has no series yet (its labels name what exists only at run time: a
/// partition, a campaign, a route). Every family the service documents is therefore in every scrape.
package enum MetricsExposition {
    package static func text(_ registry: PrometheusCollectorRegistry, service: MetricCatalog.Service?) -> [UInt8] {
        var buffer = registry.emitToBuffer()
        guard let service else { return buffer }
        let typed = typedFamilies(buffer)
        for family in MetricCatalog.families(of: service) where !typed.contains(family.name) {
            buffer.append(contentsOf: "# HELP \(family.name) \(family.help)\n# TYPE \(family.name) \(family.kind.prometheusType)\n".utf8)
        }
        return buffer
    }

    /// The names of the `# TYPE` lines of an exposition.
    static func typedFamilies(_ text: [UInt8]) -> Set<String> {
        let prefix = Array("# TYPE ".utf8)
        var names: Set<String> = []
        for line in text.split(separator: UInt8(ascii: "\n")) where line.starts(with: prefix) {
            let rest = line.dropFirst(prefix.count)
            names.insert(String(decoding: rest.prefix { $0 != UInt8(ascii: " ") }, as: UTF8.self))
        }
        return names
    }
}
