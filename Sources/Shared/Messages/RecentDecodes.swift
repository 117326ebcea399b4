import Foundation
import Synchronization

/// The last few messages decoded, by key, each with the bytes it was decoded from: a message stored as bytes when it
/// arrives and read back moments later (a send request between its record and its claim, a contact snapshot between its
/// record and the claims of its profile's sends) is decoded once, not twice.
///
/// A value is returned only for the very bytes it was decoded from, so that the cache can never answer for anything
/// else (another version of the row, another partition's owner writing the same key): decoding is a function of the
/// bytes alone. Bounded: past `capacity` keys, the oldest remembered goes first.
package final class RecentDecodes<Value: Sendable>: Sendable {
    private struct Entry {
        var sequence: Int
        var bytes: [UInt8]
        var value: Value
    }

    private struct State: ~Copyable {
        var entries: [String: Entry] = [:]
        /// The key remembered at each sequence number, modulo the capacity (its count): the one to forget when its slot
        /// comes round.
        var ring: [(key: String, sequence: Int)?]
        var next = 0
    }

    private let state: Mutex<State>

    package init(capacity: Int) {
        precondition(capacity > 0, "a cache of at least one entry")
        state = Mutex(State(ring: Array(repeating: nil, count: capacity)))
    }

    /// Remembers `value` as what `bytes` decode to under `key` (replacing what the key held).
    package func remember(_ value: Value, for key: String, decodedFrom bytes: [UInt8]) {
        state.withLock { state in
            let slot = state.next % state.ring.count
            if let old = state.ring[slot], state.entries[old.key]?.sequence == old.sequence {
                state.entries[old.key] = nil
            }
            state.ring[slot] = (key, state.next)
            state.entries[key] = Entry(sequence: state.next, bytes: bytes, value: value)
            state.next += 1
        }
    }

    /// What `key`'s bytes decoded to, if they are exactly `bytes`.
    package func value(for key: String, bytes: some ContiguousBytes) -> Value? {
        state.withLock { state -> Value? in
            guard let entry = state.entries[key] else { return nil }
            let same = bytes.withUnsafeBytes { given in
                entry.bytes.withUnsafeBytes { kept in
                    given.count == kept.count && (given.count == 0 || memcmp(given.baseAddress!, kept.baseAddress!, given.count) == 0)
                }
            }
            return same ? entry.value : nil
        }
    }
}
