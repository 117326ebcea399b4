import Foundation
import Metrics
import Shared

/// The ingest's own metrics on `/metrics` (requests by route and status come from Hummingbird's middleware).
enum IngestMetrics {
    /// Writes by operation and outcome: `accepted` (the broker has them) or `unavailable` (503, nothing promised).
    static func writes(_ records: [IngestRecord], outcome: String) {
        var counts: [IngestOp: Int] = [:]
        for record in records { counts[record.op, default: 0] += 1 }
        for (op, count) in counts {
            Counter(label: "herald_ingest_writes_total", dimensions: [("op", op.rawValue), ("outcome", outcome)])
                .increment(by: count)
        }
    }

    /// Values the compatibility APIs kept changed (cut to a limit, renamed), by code.
    static func adjusted(_ adjustments: [Problem]) {
        var counts: [String: Int] = [:]
        for adjustment in adjustments { counts[adjustment.code, default: 0] += 1 }
        for (code, count) in counts {
            Counter(label: "herald_ingest_adjustments_total", dimensions: [("code", code)]).increment(by: count)
        }
    }

    /// Rejected values or operations by the rule's code (a closed set; the path, which names client fields, is not a
    /// label).
    static func rejected(_ problems: ProblemList) {
        for (code, count) in problems.counts {
            Counter(label: "herald_ingest_rejections_total", dimensions: [("code", code)]).increment(by: count)
        }
    }
}
