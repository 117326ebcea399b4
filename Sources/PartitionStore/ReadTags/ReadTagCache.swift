import Foundation
import Synchronization

/// The entity tags of a partition database's last answers to reads, each under the owner whose rows the answer was
/// computed from (`RowOwners`) and a name for the read (`in-app <installation>`), so that a revalidation whose tag is
/// still current is answered without reading the database (docs/partitions.md, "Answers kept by the owner").
///
/// A tag is dropped as soon as a committed transaction changed a row of its owner (`RowChangeWatch`, on the database's
/// writer). It also holds only until an instant the reader gives (the answer's next change by time alone) and for one
/// configuration generation. A reader takes a `stamp` of the owner before its read transaction begins and puts its
/// tag with it: a change of the owner committed meanwhile (which the read may or may not have seen) makes the put a
/// no-op, so that no tag computed from rows older than the last change is ever kept.
package final class ReadTagCache: Sendable {
    /// A read's tag, as kept.
    package struct Tag: Sendable, Equatable {
        package var etag: String
        /// The tag holds before this instant: the answer's inputs may change by time alone then.
        package var until: Date
        /// The configuration the answer was computed with (`EngagementRules.generation`).
        package var generation: UInt64

        package init(etag: String, until: Date, generation: UInt64) {
            self.etag = etag
            self.until = until
            self.generation = generation
        }
    }

    /// Owners hash to one of these change counters: a stamp is the owner's counter when the read began.
    static let stripes = 4096

    /// A read's tag under its name, kept by its 64-bit hash (`Hasher`'s, seeded per process): two names of one owner
    /// that collide (a chance of one in 2⁶⁴ per pair) share one slot, and a tag found there answers only a client that
    /// names that very tag.
    private struct Named {
        var name: Int
        var tag: Tag
    }

    private static func hash(_ name: String) -> Int {
        var hasher = Hasher()
        hasher.combine(name)
        return hasher.finalize()
    }

    private struct State {
        /// Owner → its reads' tags (one per installation: a few at most, an array is smaller than a dictionary).
        var tags: [String: [Named]] = [:]
        var count = 0
        var changes = [UInt64](repeating: 0, count: ReadTagCache.stripes)
    }

    private let state = Mutex(State())
    /// The most tags kept: past it, the expired ones go, then half of the rest.
    package let capacity: Int

    package init(capacity: Int) {
        self.capacity = max(1, capacity)
    }

    static func stripe(_ owner: String) -> Int { Int(UInt(bitPattern: hash(owner)) % UInt(stripes)) }

    /// The owner's change counter: taken before a read transaction begins, given back to `put`.
    package func stamp(_ owner: String) -> UInt64 {
        let stripe = Self.stripe(owner)
        return state.withLock { $0.changes[stripe] }
    }

    /// The tag of the read `name` of `owner`, if one is kept for the configuration `generation` and holds at `now`.
    package func tag(_ owner: String, _ name: String, generation: UInt64, at now: Date) -> String? {
        let name = Self.hash(name)
        return state.withLock { state in
            guard let tag = state.tags[owner]?.first(where: { $0.name == name })?.tag, tag.generation == generation, now < tag.until
            else { return nil }
            return tag.etag
        }
    }

    /// Keeps the tag of the read `name` of `owner`, unless the owner changed since `stamp` was taken.
    package func put(_ owner: String, _ name: String, _ tag: Tag, stamp: UInt64) {
        let (stripe, name) = (Self.stripe(owner), Self.hash(name))
        state.withLock { state in
            guard state.changes[stripe] == stamp else { return }
            if state.count >= capacity { Self.evict(&state, capacity: capacity, now: Date()) }
            if let index = state.tags[owner]?.firstIndex(where: { $0.name == name }) {
                state.tags[owner]![index].tag = tag
            } else {
                state.tags[owner, default: []].append(Named(name: name, tag: tag))
                state.count += 1
            }
        }
    }

    /// The owners' rows changed (a commit): their tags go, and reads of them in flight keep nothing.
    package func changed(_ owners: Set<String>) {
        let stripes = owners.map(Self.stripe)
        state.withLock { state in
            for (owner, stripe) in zip(owners, stripes) {
                state.changes[stripe] &+= 1
                if let removed = state.tags.removeValue(forKey: owner) { state.count -= removed.count }
            }
        }
    }

    /// How many tags are kept.
    package var count: Int { state.withLock { $0.count } }

    private static func evict(_ state: inout State, capacity: Int, now: Date) {
        state.tags = state.tags.compactMapValues { tags in
            let held = tags.filter { now < $0.tag.until }
            return held.isEmpty ? nil : held
        }
        state.count = state.tags.values.reduce(0) { $0 + $1.count }
        guard state.count >= capacity / 2 else { return }
        // Which half goes does not matter: a tag not kept costs one read the next time.
        var kept = 0
        state.tags = state.tags.filter { _, tags in
            guard kept < capacity / 2 else { return false }
            kept += tags.count
            return true
        }
        state.count = kept
    }
}
