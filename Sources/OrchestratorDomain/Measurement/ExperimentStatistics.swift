import Foundation

/// The statistics of an experiment's report (docs/measurement.md, "Statistics"), checked against statsmodels and
/// scipy on fixed counts (`ExperimentStatisticsTests`):
///
/// - a variant against the control group: the difference of the conversion rates with its 95 % Wald interval
///   (unpooled variances, statsmodels' `confint_proportions_2indep(method="wald")`), and the two-sided p-value of the
///   pooled z-test (`proportions_ztest`);
/// - Holm's step-down correction of the variants' p-values (`multipletests(method="holm")`), so that testing several
///   variants against one control does not multiply false wins;
/// - one arm's rate with its 95 % Wilson score interval (`proportion_confint(method="wilson")`), which the HTML report
///   draws: unlike Wald's, it stays within 0 and 1 and is not empty at 0 or at every profile;
/// - the sample-ratio check: Pearson's chi-squared of the observed split against the weights (`scipy.stats.chisquare`),
///   whose tiny p-value says the assignment or the recording is broken, not that a variant won.
package enum ExperimentStatistics {
    package struct Comparison: Sendable, Equatable {
        /// The variant's rate minus the control's.
        package var difference: Double
        package var low: Double
        package var high: Double
        /// The difference over the control's rate (nil when the control's rate is 0).
        package var relativeUplift: Double?
        package var z: Double
        /// Two-sided, before any correction.
        package var p: Double
    }

    /// The variant (`converted` of `profiles`) against the control; nil when either arm is empty, or when no profile
    /// or every profile converted in both (no variance: nothing to test).
    package static func compare(
        control: (converted: Int, profiles: Int), variant: (converted: Int, profiles: Int), confidence: Double = 0.95
    ) -> Comparison? {
        guard control.profiles > 0, variant.profiles > 0 else { return nil }
        let (n1, n2) = (Double(variant.profiles), Double(control.profiles))
        let (p1, p2) = (Double(variant.converted) / n1, Double(control.converted) / n2)
        let pooled = Double(variant.converted + control.converted) / (n1 + n2)
        let pooledError = (pooled * (1 - pooled) * (1 / n1 + 1 / n2)).squareRoot()
        guard pooledError > 0 else { return nil }
        let difference = p1 - p2
        let z = difference / pooledError
        let error = (p1 * (1 - p1) / n1 + p2 * (1 - p2) / n2).squareRoot()
        let critical = normalQuantile(1 - (1 - confidence) / 2)
        return Comparison(
            difference: difference, low: difference - critical * error, high: difference + critical * error,
            relativeUplift: p2 > 0 ? difference / p2 : nil, z: z, p: erfc(abs(z) / 2.0.squareRoot()))
    }

    /// The Wilson score interval of `successes` out of `trials`; nil without trials.
    package static func wilson(_ successes: Int, of trials: Int, confidence: Double = 0.95) -> (low: Double, high: Double)? {
        guard trials > 0 else { return nil }
        let (n, p) = (Double(trials), Double(successes) / Double(trials))
        let z = normalQuantile(1 - (1 - confidence) / 2)
        let denominator = 1 + z * z / n
        let center = (p + z * z / (2 * n)) / denominator
        let half = z * (p * (1 - p) / n + z * z / (4 * n * n)).squareRoot() / denominator
        return (center - half, center + half)
    }

    /// Holm's adjusted p-values, in the order given.
    package static func holm(_ values: [Double]) -> [Double] {
        let order = values.indices.sorted { values[$0] < values[$1] }
        var adjusted = [Double](repeating: 1, count: values.count)
        var running = 0.0
        for (rank, index) in order.enumerated() {
            running = max(running, min(1, Double(values.count - rank) * values[index]))
            adjusted[index] = running
        }
        return adjusted
    }

    /// Pearson's chi-squared of `observed` against the split `weights` say, its degrees of freedom and p-value.
    package static func sampleRatio(observed: [Int], weights: [Double]) -> (chiSquare: Double, degrees: Int, p: Double) {
        let total = Double(observed.reduce(0, +))
        let sum = weights.reduce(0, +)
        var chiSquare = 0.0
        for (count, weight) in zip(observed, weights) {
            let expected = total * weight / sum
            guard expected > 0 else { continue }
            chiSquare += (Double(count) - expected) * (Double(count) - expected) / expected
        }
        let degrees = observed.count - 1
        return (chiSquare, degrees, degrees > 0 ? upperRegularizedGamma(Double(degrees) / 2, chiSquare / 2) : 1)
    }

    /// The standard normal distribution's quantile: Acklam's approximation, then one Halley step on `erfc` (about
    /// 1e-15 relative).
    package static func normalQuantile(_ p: Double) -> Double {
        precondition(p > 0 && p < 1)
        let a = [-3.969683028665376e+01, 2.209460984245205e+02, -2.759285104469687e+02, 1.383577518672690e+02, -3.066479806614716e+01, 2.506628277459239e+00]
        let b = [-5.447609879822406e+01, 1.615858368580409e+02, -1.556989798598866e+02, 6.680131188771972e+01, -1.328068155288572e+01]
        let c = [-7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e+00, -2.549732539343734e+00, 4.374664141464968e+00, 2.938163982698783e+00]
        let d = [7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e+00, 3.754408661907416e+00]
        let low = 0.02425
        var x: Double
        if p < low {
            let q = (-2 * log(p)).squareRoot()
            x = (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) / ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1)
        } else if p <= 1 - low {
            let q = p - 0.5
            let r = q * q
            x = (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q
                / (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1)
        } else {
            let q = (-2 * log(1 - p)).squareRoot()
            x = -(((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) / ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1)
        }
        let e = 0.5 * erfc(-x / 2.0.squareRoot()) - p
        let u = e * (2 * Double.pi).squareRoot() * exp(x * x / 2)
        x -= u / (1 + x * u / 2)
        return x
    }

    /// Q(a, x), the regularized upper incomplete gamma function (the chi-squared distribution's survival function at
    /// 2x with 2a degrees): its series below a + 1, its continued fraction above (Lentz).
    static func upperRegularizedGamma(_ a: Double, _ x: Double) -> Double {
        guard x > 0 else { return 1 }
        let logPrefix = a * log(x) - x - lgamma(a)
        if x < a + 1 {
            var term = 1 / a
            var sum = term
            var n = a
            for _ in 0..<10_000 {
                n += 1
                term *= x / n
                sum += term
                if abs(term) < abs(sum) * 1e-16 { break }
            }
            return max(0, 1 - sum * exp(logPrefix))
        }
        let tiny = 1e-300
        var b = x + 1 - a
        var c = 1 / tiny
        var d = 1 / b
        var h = d
        for i in 1..<10_000 {
            let an = -Double(i) * (Double(i) - a)
            b += 2
            d = an * d + b
            if abs(d) < tiny { d = tiny }
            c = b + an / c
            if abs(c) < tiny { c = tiny }
            d = 1 / d
            let delta = d * c
            h *= delta
            if abs(delta - 1) < 1e-16 { break }
        }
        return exp(logPrefix) * h
    }
}
