import CoreMetrics
import Foundation
import PartitionStore
import Shared
import Synchronization

/// The suppression list as this instance holds it (docs/data-rights.md, "The suppression list"): the keys of
/// `herald.suppressions` (`<project>/<channel>/<digest>`), folded from the topic's beginning by a `WholeTopicFollower`.
/// An email or SMS target whose address is on it is suppressed at every attempt (`suppressed_address`), transactional
/// or marketing, whatever its profile's subscription says.
final class SuppressionList: Sendable {
    private struct State {
        var ready: Bool
        var keys: Set<String> = []
        /// Entries per channel, kept as keys come and go (the metric's figure).
        var counts: [String: Int] = [:]
    }

    private let state: Mutex<State>

    /// `ready: false` (the service's): no email or SMS is claimed until the follower has read the list up to where it
    /// ended at the start (`markReady`), so that a restart never sends to a suppressed address while its list is read.
    init(ready: Bool = true) {
        state = Mutex(State(ready: ready))
        for channel in SuppressionEntry.channels { Self.gauge(channel.rawValue, 0) }
    }

    var isReady: Bool { state.withLock { $0.ready } }

    func markReady() { state.withLock { $0.ready = true } }

    func contains(project: String, channel: MessageChannel, address: String) -> Bool {
        let key = SuppressionEntry.key(project: project, channel: channel, digest: SuppressionEntry.digest(channel: channel, address: address))
        return state.withLock { $0.keys.contains(key) }
    }

    /// A record of `herald.suppressions`: an entry adds its key, a tombstone lifts it.
    func apply(_ record: KafkaRecord) {
        guard let key = record.keyString else { return }
        change(key, present: record.value != nil)
    }

    /// Adds an entry at once (this instance's own write; the follower reads it back too).
    func add(_ entry: SuppressionEntry) { change(entry.key, present: true) }

    private func change(_ key: String, present: Bool) {
        let parts = key.split(separator: "/")
        guard parts.count == 3, SuppressionEntry.channels.map(\.rawValue).contains(String(parts[1])) else { return }
        let channel = String(parts[1])
        let count = state.withLock { state -> Int? in
            let changed = present ? state.keys.insert(key).inserted : state.keys.remove(key) != nil
            guard changed else { return nil }
            state.counts[channel, default: 0] += present ? 1 : -1
            return state.counts[channel]
        }
        if let count { Self.gauge(channel, count) }
    }

    /// `herald_suppressed_addresses{channel}`.
    private static func gauge(_ channel: String, _ count: Int) {
        Gauge(label: "herald_suppressed_addresses", dimensions: [("channel", channel)]).record(count)
    }

    var count: Int { state.withLock { $0.keys.count } }

    /// The record that puts `address` on the list.
    static func record(_ entry: SuppressionEntry) -> PendingOutput {
        PendingOutput(topic: HeraldTopic.suppressions.name, key: entry.key, value: (try? Wire.encode(entry)) ?? [])
    }
}
