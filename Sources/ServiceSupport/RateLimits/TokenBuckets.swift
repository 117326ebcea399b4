import Foundation
import Shared
import Synchronization

/// Token buckets by name (a client address, an API key): each refills at `rate` tokens a second up to `burst`, and a
/// request takes one. Bounded: past `maxBuckets` names, the buckets that are full again (idle long enough) are
/// forgotten first, then the least recently used, so that a flood of addresses cannot grow the table.
package final class TokenBuckets: Sendable {
    package let rate: Double
    package let burst: Double
    package let maxBuckets: Int
    private let clock: @Sendable () -> ContinuousClock.Instant
    private let buckets = Mutex<[String: Bucket]>([:])

    struct Bucket {
        var tokens: Double
        var updated: ContinuousClock.Instant
    }

    /// What a take found: whether it was allowed, what is left, and when the next token and a full bucket come.
    package struct Decision: Equatable, Sendable {
        package var allowed: Bool
        package var remaining: Int
        package var retryAfter: Duration
        package var untilFull: Duration
    }

    package init(
        rate: Double, burst: Double, maxBuckets: Int = 100_000,
        clock: @escaping @Sendable () -> ContinuousClock.Instant = { ContinuousClock.now }
    ) {
        self.rate = rate
        self.burst = burst
        self.maxBuckets = maxBuckets
        self.clock = clock
    }

    package func take(_ name: String) -> Decision {
        let now = clock()
        return buckets.withLock { buckets in
            var bucket = buckets[name].map { refilled($0, at: now) } ?? Bucket(tokens: burst, updated: now)
            let allowed = bucket.tokens >= 1
            if allowed { bucket.tokens -= 1 }
            if buckets[name] == nil, buckets.count >= maxBuckets { evict(&buckets, now: now) }
            buckets[name] = bucket
            return Decision(
                allowed: allowed, remaining: Int(bucket.tokens.rounded(.down)),
                retryAfter: allowed ? .zero : .seconds((1 - bucket.tokens) / rate),
                untilFull: .seconds((burst - bucket.tokens) / rate))
        }
    }

    private func refilled(_ bucket: Bucket, at now: ContinuousClock.Instant) -> Bucket {
        let elapsed = now - bucket.updated
        return Bucket(tokens: min(burst, bucket.tokens + max(0, elapsed.timeInterval) * rate), updated: now)
    }

    /// Makes room for one more: the full buckets go (a full bucket is the same as none), else the oldest half.
    private func evict(_ buckets: inout [String: Bucket], now: ContinuousClock.Instant) {
        buckets = buckets.filter { refilled($0.value, at: now).tokens < burst }
        guard buckets.count >= maxBuckets else { return }
        let oldest = buckets.sorted { $0.value.updated < $1.value.updated }.prefix(buckets.count / 2)
        for (name, _) in oldest { buckets.removeValue(forKey: name) }
    }

    package var count: Int { buckets.withLock { $0.count } }
}
