import Foundation

/// Exponential backoff with full jitter, never shorter than the provider's `Retry-After`.
struct RetryPolicy: Sendable, Equatable {
    /// Attempts in all, the first included.
    var maxAttempts = 5
    var base: Duration = .seconds(1)
    var cap: Duration = .seconds(600)
    /// 0...1, from a random source (injected in tests).
    var random: @Sendable () -> Double = { Double.random(in: 0...1) }

    static func == (lhs: RetryPolicy, rhs: RetryPolicy) -> Bool {
        lhs.maxAttempts == rhs.maxAttempts && lhs.base == rhs.base && lhs.cap == rhs.cap
    }

    /// The wait before attempt `attempt + 1`: a random time up to `base · 2^(attempt−1)` (capped), at least
    /// `retryAfter`.
    func delay(afterAttempt attempt: Int, retryAfter: Duration?) -> Duration {
        let exponential = base * (1 << min(attempt - 1, 20))
        let ceiling = min(exponential, cap)
        let jittered = ceiling * random()
        return max(jittered, min(retryAfter ?? .zero, cap * 6))
    }
}
