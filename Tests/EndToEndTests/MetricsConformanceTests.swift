import Foundation
import HeraldTestSupport
import ServiceSupport
import Shared
import Testing

/// The metric catalog against what documents it (the README's table) and what counts (the code's metric names). The
/// services' `/metrics` themselves are judged by promtool in `ServiceProcessTests` (at start) and
/// `NotifierEndToEndTests` (after a push went through the three), with `metricsProblems`.
@Suite("Metric catalog")
struct MetricsConformanceTests {
    @Test("the README's metrics table lists every family of the catalog, on the same services, and nothing else")
    func readmeTable() throws {
        let readme = try String(contentsOfFile: repositoryFile("README.md"), encoding: .utf8)
        let lines = readme.split(separator: "\n", omittingEmptySubsequences: false)
        let header = try #require(lines.firstIndex { $0.hasPrefix("| metric | service |") }, "the README's metrics table")
        var documented: [String: Set<MetricCatalog.Service>] = [:]
        for line in lines[(header + 2)...].prefix(while: { $0.hasPrefix("|") }) {
            let cells = line.split(separator: "|").map { $0.trimmingCharacters(in: .whitespaces) }
            let services: Set<MetricCatalog.Service> =
                cells[1] == "every HTTP server"
                ? Set(MetricCatalog.Service.allCases)
                : Set(cells[1].split(separator: ",").compactMap { MetricCatalog.Service(rawValue: $0.trimmingCharacters(in: .whitespaces)) })
            // `name{label,…}` in backquotes, one or more a cell.
            for quoted in cells[0].split(separator: "`", omittingEmptySubsequences: false).enumerated() where quoted.offset % 2 == 1 {
                documented[String(quoted.element.prefix { $0 != "{" }), default: []].formUnion(services)
            }
        }
        let catalog = Dictionary(uniqueKeysWithValues: MetricCatalog.all.map { ($0.name, $0.services) })
        #expect(documented.count == catalog.count)
        for (name, services) in catalog {
            #expect(documented[name] == services, "\(name): the catalog says \(services.map(\.rawValue).sorted())")
        }
        for name in documented.keys where catalog[name] == nil { Issue.record("\(name) is in the README, not in the catalog") }
    }

    @Test("every metric the code names is in the catalog, and every catalog family is named by the code")
    func codeNames() throws {
        var named: Set<String> = []
        let sources = repositoryFile("Sources")
        let files = try #require(FileManager.default.subpathsOfDirectory(atPath: sources).filter { $0.hasSuffix(".swift") })
        let pattern = try Regex(#"label: "(herald_[a-z_]+)""#)
        for file in files {
            let text = try String(contentsOfFile: sources + "/" + file, encoding: .utf8)
            for match in text.matches(of: pattern) { named.insert(String(match.output[1].substring ?? "")) }
        }
        // InFlightLimitMiddleware and RateLimiter name their counters after the service.
        named.formUnion([
            "herald_ingest_overloaded_total", "herald_notifier_overloaded_total", "herald_orchestrator_overloaded_total",
            "herald_ingest_rate_limited_total", "herald_orchestrator_rate_limited_total",
        ])
        named.formUnion(MetricCatalog.renamed.values)
        #expect(named.count > 30)
        for name in named where MetricCatalog.family(named: name) == nil { Issue.record("\(name) is not in MetricCatalog") }
        for family in MetricCatalog.all where !named.contains(family.name) { Issue.record("nothing counts \(family.name)") }
    }

    @Test("the judge: promtool finds a counter without _total, a family without HELP, and passes a clean one")
    func judge() async throws {
        let clean = "# HELP herald_x_total Things.\n# TYPE herald_x_total counter\nherald_x_total 0\n"
        #expect(try await promtoolProblems(clean) == [])
        let problems = try await promtoolProblems("# TYPE hb_requests counter\nhb_requests 1\n")
        #expect(problems.contains { $0.contains(#"should have "_total" suffix"#) }, "\(problems)")
        #expect(problems.contains { $0.contains("no help text") }, "\(problems)")
    }
}

/// What is wrong with a service's `/metrics` exposition: promtool's problems, then the catalog's: each family of the
/// service announced with its help text and type, no family the catalog does not give the service, and the zero series
/// present (with the value 0 when `atStart`).
func metricsProblems(_ exposition: String, service: MetricCatalog.Service, atStart: Bool) async throws -> [String] {
    var problems = try await promtoolProblems(exposition)
    var help: [String: String] = [:]
    var types: [String: String] = [:]
    for line in exposition.split(separator: "\n") {
        let words = line.split(separator: " ", maxSplits: 3).map(String.init)
        guard words.count >= 4, words[0] == "#" else { continue }
        if words[1] == "HELP" { help[words[2]] = words[3] }
        if words[1] == "TYPE" { types[words[2]] = words[3] }
    }
    let samples = MetricsText(exposition)
    for family in MetricCatalog.families(of: service) {
        if help[family.name] != family.help { problems.append("\(family.name): HELP \(help[family.name] ?? "missing")") }
        if types[family.name] != family.kind.prometheusType { problems.append("\(family.name): TYPE \(types[family.name] ?? "missing")") }
        let sampleName: String
        switch family.kind {
        case .counter, .gauge: sampleName = family.name
        case .histogram, .durations: sampleName = family.name + "_count"
        }
        for labels in family.zeroSeries {
            let series = samples.samples(sampleName).filter { $0.labels == Dictionary(uniqueKeysWithValues: labels) }
            if series.count != 1 || (atStart && series.first?.value != 0) {
                problems.append("\(sampleName)\(labels): \(series.map(\.value)) at start: \(atStart)")
            }
        }
    }
    let documented = Set(MetricCatalog.families(of: service).map(\.name))
    for name in types.keys where !documented.contains(name) { problems.append("\(name): not in the \(service) catalog") }
    return problems
}
