import Foundation
import HeraldTestSupport
import Shared
import Testing

@testable import OrchestratorDomain

/// The report's statistics against statsmodels and scipy (the project's .venv) on fixed counts: the two-proportion
/// z-test and Wald interval, Holm's correction, and the sample-ratio chi-squared.
@Suite("Experiments: statistics against statsmodels")
struct ExperimentStatisticsTests {
    /// (control converted, control profiles, variant converted, variant profiles).
    static let pairs: [(Int, Int, Int, Int)] = [
        (100, 1000, 130, 1000), (10, 200, 12, 180), (0, 50, 3, 50), (500, 10_000, 560, 10_100), (1, 3, 2, 3),
        (45, 45, 40, 50), (7, 1_000_000, 19, 1_000_000), (300, 400, 280, 400),
    ]
    /// (observed, weights).
    static let splits: [([Int], [Double])] = [
        ([5000, 5000], [1, 1]), ([5100, 4900], [1, 1]), ([1000, 4400, 4600], [10, 45, 45]), ([950, 9050], [1, 9]),
        ([30, 70, 0], [1, 2, 1]), ([100_230, 99_500, 100_270], [1, 1, 1]),
    ]
    static let pValues: [[Double]] = [[0.01, 0.04, 0.03], [0.2, 0.001], [0.5], [0.04, 0.04, 0.04, 0.01]]

    static let judge = #"""
    import json, sys, math
    from statsmodels.stats.proportion import proportions_ztest, confint_proportions_2indep, proportion_confint
    from statsmodels.stats.multitest import multipletests
    from scipy.stats import chisquare, norm
    cases = json.load(open(sys.argv[1]))
    out = {"pairs": [], "splits": [], "holm": [], "wilson": [], "quantile": norm.ppf(0.975)}
    for cc, cn, vc, vn in cases["pairs"]:
        for count, nobs in ((cc, cn), (vc, vn)):
            low, high = proportion_confint(count, nobs, alpha=0.05, method="wilson")
            out["wilson"].append([float(low), float(high)])
        z, p = proportions_ztest([vc, cc], [vn, cn])
        low, high = confint_proportions_2indep(vc, vn, cc, cn, method="wald", compare="diff")
        out["pairs"].append([vc / vn - cc / cn, float(low), float(high), float(z), float(p)])
    for observed, weights in cases["splits"]:
        total = sum(observed)
        expected = [total * w / sum(weights) for w in weights]
        chi, p = chisquare(observed, expected)
        out["splits"].append([float(chi), float(p)])
    for values in cases["holm"]:
        out["holm"].append([float(x) for x in multipletests(values, method="holm")[1]])
    print(json.dumps(out))
    """#

    @Test("the z-test, the Wald interval, Wilson's, Holm and the chi-squared are statsmodels' and scipy's, to 1e-9")
    func againstStatsmodels() async throws {
        let cases = JSONValue.object([
            JSONMember("pairs", .array(Self.pairs.map { .array([$0.0, $0.1, $0.2, $0.3].map { .number(String($0)) }) })),
            JSONMember("splits", .array(Self.splits.map { split in
                .array([.array(split.0.map { .number(String($0)) }), .array(split.1.map { .number(String($0)) })])
            })),
            JSONMember("holm", .array(Self.pValues.map { .array($0.map { .number(String($0)) }) })),
        ])
        let (status, verdict) = try await runJudge(Self.judge, cases: cases)
        #expect(status == 0, "\(verdict)")
        let reference = try JSONParser.parse(Array(verdict.utf8))
        func numbers(_ value: JSONValue?) -> [Double] {
            guard case .array(let items)? = value else { return [] }
            return items.compactMap { if case .number(let text) = $0 { Double(text) } else { nil } }
        }
        func close(_ a: Double, _ b: Double) -> Bool { abs(a - b) <= 1e-9 * max(1, abs(b)) }
        if case .number(let text)? = reference["quantile"], let quantile = Double(text) {
            #expect(close(ExperimentStatistics.normalQuantile(0.975), quantile))
        }
        for (index, pair) in Self.pairs.enumerated() {
            let expected = numbers(reference["pairs"]?[index])
            let got = try #require(ExperimentStatistics.compare(control: (pair.0, pair.1), variant: (pair.2, pair.3)))
            let mine = [got.difference, got.low, got.high, got.z, got.p]
            #expect(expected.count == 5 && zip(mine, expected).allSatisfy(close), "\(pair): \(mine) against \(expected)")
        }
        // Each arm's own rate (the HTML report's bars).
        let arms = Self.pairs.flatMap { [($0.0, $0.1), ($0.2, $0.3)] }
        for (index, arm) in arms.enumerated() {
            let expected = numbers(reference["wilson"]?[index])
            let got = try #require(ExperimentStatistics.wilson(arm.0, of: arm.1))
            #expect(expected.count == 2 && close(got.low, expected[0]) && close(got.high, expected[1]), "\(arm): \(got) against \(expected)")
        }
        for (index, split) in Self.splits.enumerated() {
            let expected = numbers(reference["splits"]?[index])
            let got = ExperimentStatistics.sampleRatio(observed: split.0, weights: split.1)
            #expect(expected.count == 2 && close(got.chiSquare, expected[0]) && close(got.p, expected[1]), "\(split): \(got) against \(expected)")
        }
        for (index, values) in Self.pValues.enumerated() {
            let expected = numbers(reference["holm"]?[index])
            #expect(zip(ExperimentStatistics.holm(values), expected).allSatisfy(close) && expected.count == values.count, "\(values)")
        }
    }

    @Test("nothing to test: an empty arm, or no variance in either")
    func degenerate() {
        #expect(ExperimentStatistics.compare(control: (0, 0), variant: (1, 10)) == nil)
        #expect(ExperimentStatistics.compare(control: (0, 100), variant: (0, 100)) == nil)
        #expect(ExperimentStatistics.compare(control: (100, 100), variant: (50, 50)) == nil)
        #expect(ExperimentStatistics.compare(control: (0, 100), variant: (5, 100))?.relativeUplift == nil)
    }
}
