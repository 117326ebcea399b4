import Foundation
import Shared
import Testing

@Suite("Reading /metrics (herald status)")
struct MetricsTextTests {
    static let exposition = #"""
        # HELP herald_deliveries_total deliveries
        # TYPE herald_deliveries_total counter
        herald_deliveries_total{channel="push",outcome="sent",reason=""} 7
        herald_deliveries_total{channel="push",outcome="failed",reason="token_invalid"} 2
        herald_deliveries_total{channel="email",outcome="sent",reason=""} 3
        herald_campaign_decisions_total{campaign="demo/a \"quoted\", b",outcome="sent"} 4
        herald_segment_evaluations_total 12 1700000000000
        herald_consumer_lag{topic="herald.ingest",partition="0"} 1.0
        herald_consumer_lag{topic="herald.ingest",partition="1"} 4.0
        lat_bucket{campaign="c",channel="push",le="0.1"} 2
        lat_bucket{campaign="c",channel="push",le="0.5"} 6
        lat_bucket{campaign="c",channel="push",le="1.0"} 8
        lat_bucket{campaign="c",channel="push",le="+Inf"} 10
        lat_bucket{campaign="c",channel="sms",le="0.1"} 0
        lat_bucket{campaign="c",channel="sms",le="0.5"} 0
        lat_bucket{campaign="c",channel="sms",le="1.0"} 10
        lat_bucket{campaign="c",channel="sms",le="+Inf"} 10
        lat_bucket{campaign="empty",channel="push",le="0.1"} 0
        lat_bucket{campaign="empty",channel="push",le="+Inf"} 0
        not a sample line
        broken{label="unterminated 3
        """#

    @Test("samples with labels (escaped quotes, commas), timestamps; comments and broken lines skipped")
    func parse() {
        let text = MetricsText(Self.exposition)
        #expect(text.sum("herald_deliveries_total") == 12)
        #expect(text.sum("herald_deliveries_total", ["channel": "push"]) == 9)
        #expect(text.sum("herald_deliveries_total", ["channel": "push", "outcome": "sent"]) == 7)
        #expect(text.sum("herald_deliveries_total", ["channel": "sms"]) == 0)
        #expect(text.values(of: "campaign", in: "herald_campaign_decisions_total") == [#"demo/a "quoted", b"#])
        #expect(text.sum("herald_segment_evaluations_total") == 12)
        #expect(text.sum("herald_consumer_lag") == 5)
        #expect(text.samples("broken").isEmpty && text.samples("not").isEmpty)
    }

    @Test(
        "histogram quantiles interpolate inside the bucket like histogram_quantile",
        arguments: [
            // push only: buckets 0.1→2, 0.5→6, 1→8, +Inf→10
            (0.1, ["channel": "push"], 0.05),  // rank 1 of 2 in (0, 0.1]
            (0.5, ["channel": "push"], 0.4),  // rank 5: 3 of 4 in (0.1, 0.5]
            (0.8, ["channel": "push"], 1.0),  // rank 8: the top of (0.5, 1]
            (0.99, ["channel": "push"], 1.0),  // in +Inf: the highest finite bound
            // both channels add up: 0.1→2, 0.5→6, 1→18, +Inf→20; rank 10: 4 of 12 in (0.5, 1]
            (0.5, [:], 0.5 + 0.5 * 4 / 12),
        ] as [(Double, [String: String], Double)])
    func quantiles(q: Double, labels: [String: String], expected: Double) throws {
        let text = MetricsText(Self.exposition)
        let value = try #require(text.quantile(q, histogram: "lat", labels.merging(["campaign": "c"]) { $1 }))
        #expect(abs(value - expected) < 1e-9, "q\(q) \(labels): \(value)")
    }

    @Test("no observations: no quantile")
    func empty() {
        let text = MetricsText(Self.exposition)
        #expect(text.quantile(0.5, histogram: "lat", ["campaign": "empty"]) == nil)
        #expect(text.quantile(0.5, histogram: "missing") == nil)
    }
}
