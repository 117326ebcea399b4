import Foundation

/// The samples of a Prometheus text exposition (what `/metrics` answers), for the operator's `herald status`.
/// Comments and `# TYPE` lines are skipped; a line that does not parse is skipped too (the reader is a viewer, not a
/// validator).
package struct MetricsText: Sendable {
    package struct Sample: Sendable, Equatable {
        package var name: String
        package var labels: [String: String]
        package var value: Double
    }

    package var samples: [Sample]

    package init(_ text: String) {
        samples = text.split(whereSeparator: \.isNewline).compactMap { Self.sample(Substring($0)) }
    }

    /// The samples called `name` whose labels include `matching`.
    package func samples(_ name: String, _ matching: [String: String] = [:]) -> [Sample] {
        samples.filter { sample in sample.name == name && matching.allSatisfy { sample.labels[$0.key] == $0.value } }
    }

    /// The sum of the samples called `name` whose labels include `matching` (0 when there are none).
    package func sum(_ name: String, _ matching: [String: String] = [:]) -> Double {
        samples(name, matching).reduce(0) { $0 + $1.value }
    }

    /// The values of `label` among the samples called `name`, sorted.
    package func values(of label: String, in name: String) -> [String] {
        Set(samples(name).compactMap { $0.labels[label] }).sorted()
    }

    /// The `q` quantile (0…1) of histogram `name` for the series whose labels include `matching`, interpolated
    /// linearly inside its bucket as Prometheus' `histogram_quantile` does; nil without observations. A quantile in
    /// the `+Inf` bucket is the highest finite bound.
    package func quantile(_ q: Double, histogram name: String, _ matching: [String: String] = [:]) -> Double? {
        var buckets: [(bound: Double, count: Double)] = []
        for sample in samples(name + "_bucket", matching) {
            guard let le = sample.labels["le"] else { continue }
            let bound = le == "+Inf" ? Double.infinity : Double(le)
            guard let bound else { continue }
            // Several series (e.g. two channels of one campaign) add up bucket by bucket.
            if let index = buckets.firstIndex(where: { $0.bound == bound }) {
                buckets[index].count += sample.value
            } else {
                buckets.append((bound, sample.value))
            }
        }
        buckets.sort { $0.bound < $1.bound }
        guard let total = buckets.last?.count, total > 0 else { return nil }
        let rank = q * total
        var lower = 0.0
        var below = 0.0
        for bucket in buckets {
            if bucket.count >= rank {
                if bucket.bound.isInfinite { return lower }
                let inBucket = bucket.count - below
                return inBucket > 0 ? lower + (bucket.bound - lower) * (rank - below) / inBucket : bucket.bound
            }
            lower = bucket.bound
            below = bucket.count
        }
        return lower
    }

    /// `name{a="x",b="y"} 12.5` (optionally followed by a timestamp).
    private static func sample(_ line: Substring) -> Sample? {
        let line = line.drop { $0 == " " }
        guard let first = line.first, first != "#" else { return nil }
        var index = line.startIndex
        while index < line.endIndex, line[index] != "{", line[index] != " " { index = line.index(after: index) }
        let name = String(line[line.startIndex..<index])
        var labels: [String: String] = [:]
        if index < line.endIndex, line[index] == "{" {
            index = line.index(after: index)
            while index < line.endIndex, line[index] != "}" {
                guard let equals = line[index...].firstIndex(of: "=") else { return nil }
                let label = line[index..<equals].trimmingCharacters(in: CharacterSet(charactersIn: " ,"))
                var cursor = line.index(after: equals)
                guard cursor < line.endIndex, line[cursor] == "\"" else { return nil }
                cursor = line.index(after: cursor)
                var value = ""
                while cursor < line.endIndex, line[cursor] != "\"" {
                    if line[cursor] == "\\", line.index(after: cursor) < line.endIndex {
                        cursor = line.index(after: cursor)
                        value.append(line[cursor] == "n" ? "\n" : line[cursor])
                    } else {
                        value.append(line[cursor])
                    }
                    cursor = line.index(after: cursor)
                }
                guard cursor < line.endIndex else { return nil }
                labels[label] = value
                index = line.index(after: cursor)
                while index < line.endIndex, line[index] == "," || line[index] == " " { index = line.index(after: index) }
            }
            guard index < line.endIndex else { return nil }
            index = line.index(after: index)
        }
        let fields = line[index...].split(separator: " ")
        guard !name.isEmpty, let text = fields.first else { return nil }
        let value: Double? =
            switch text {
            case "+Inf": .infinity
            case "-Inf": -.infinity
            case "NaN": .nan
            default: Double(text)
            }
        return value.map { Sample(name: name, labels: labels, value: $0) }
    }
}
