import Foundation

/// A project's rule on how many marketing messages one profile may receive: at most `max` in any rolling `period`,
/// on one channel or across every channel (docs/campaigns.md, "Frequency caps").
package struct FrequencyCap: Sendable, Equatable {
    package var max: Int
    package var period: TimeInterval
    /// nil: counts and caps every channel together.
    package var channel: MessageChannel?

    package init(max: Int, period: TimeInterval, channel: MessageChannel? = nil) {
        self.max = max
        self.period = period
        self.channel = channel
    }

    /// Whether the rule counts a message on `channel`.
    package func covers(_ channel: MessageChannel) -> Bool { self.channel == nil || self.channel == channel }

    /// The longest period a rule may have: the orchestrator keeps what was sent that long.
    package static let longestPeriod: TimeInterval = 90 * 86_400
    package static let largestMax = 10_000
}
