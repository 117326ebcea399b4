import Foundation
import Shared

/// Exponential backoff with full jitter, never shorter than the provider's `Retry-After`.
struct RetryPolicy: Sendable, Equatable {
    /// Attempts in all, the first included.
    var maxAttempts = 5
    var base: Duration = .seconds(1)
    var cap: Duration = .seconds(600)
    /// When set (webhooks), attempts go on, whatever their count, until this long after the send was due: an attempt
    /// that would come later is not made.
    var window: Duration? = nil
    /// 0...1, from a random source (injected in tests).
    var random: @Sendable () -> Double = { Double.random(in: 0...1) }

    static func == (lhs: RetryPolicy, rhs: RetryPolicy) -> Bool {
        lhs.maxAttempts == rhs.maxAttempts && lhs.base == rhs.base && lhs.cap == rhs.cap && lhs.window == rhs.window
    }

    /// Why no attempt comes after `attempt` (nil: one does, at `next`): the count is spent, or the window of a send
    /// due at `start` has passed by then.
    func exhausted(afterAttempt attempt: Int, start: Date, next: Date) -> DeliveryReason.Failure? {
        if let window { return next.timeIntervalSince(start) > window.timeInterval ? .retryWindowPassed : nil }
        return attempt >= maxAttempts ? .maxRetryAttempts : nil
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
