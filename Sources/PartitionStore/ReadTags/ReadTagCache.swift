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

    /// Owner → its reads' tags (one per installation: a few at most, an array is smaller than a dictionary).
    private typealias Generation = [String: [Named]]

    /// Two generations: tags go into the young one, and a tag found in the old one moves back to it; when the young one
    /// holds half the capacity, it becomes the old one and the old one goes whole. So the cache never walks its tags,
    /// holds at most `capacity`, and what goes is what no app asked for during a whole generation (it costs its next
    /// revalidation a read, which keeps it again).
    private struct State {
        var young: Generation = [:]
        var old: Generation = [:]
        var youngCount = 0
        var oldCount = 0
        var changes = [UInt64](repeating: 0, count: ReadTagCache.stripes)

        /// The tag of the read `name` of `owner`, moved to the young generation if it was in the old one; with the
        /// generation that went meanwhile, to be freed after the lock.
        mutating func find(_ owner: String, _ name: Int, half: Int) -> (Tag?, gone: Generation?) {
            if let tag = young[owner]?.first(where: { $0.name == name })?.tag { return (tag, nil) }
            guard let index = old[owner]?.firstIndex(where: { $0.name == name }) else { return (nil, nil) }
            let tag = old[owner]![index].tag
            return (tag, keep(owner, name, tag, half: half))
        }

        /// Keeps the tag in the young generation (its copy in the old one goes); the old generation, when it went.
        mutating func keep(_ owner: String, _ name: Int, _ tag: Tag, half: Int) -> Generation? {
            if let index = old[owner]?.firstIndex(where: { $0.name == name }) {
                old[owner]!.remove(at: index)
                if old[owner]!.isEmpty { old.removeValue(forKey: owner) }
                oldCount -= 1
            }
            if let index = young[owner]?.firstIndex(where: { $0.name == name }) {
                young[owner]![index].tag = tag
                return nil
            }
            var gone: Generation?
            if youngCount >= half {
                gone = old
                (old, oldCount) = (young, youngCount)
                (young, youngCount) = ([:], 0)
            }
            young[owner, default: []].append(Named(name: name, tag: tag))
            youngCount += 1
            return gone
        }
    }

    private let state = Mutex(State())
    /// The most tags kept (two generations of half of it).
    package let capacity: Int

    package init(capacity: Int) {
        self.capacity = max(2, capacity)
    }

    static func stripe(_ owner: String) -> Int { Int(UInt(bitPattern: hash(owner)) % UInt(stripes)) }

    /// The owner's change counter: taken before a read transaction begins, given back to `put`.
    package func stamp(_ owner: String) -> UInt64 {
        let stripe = Self.stripe(owner)
        return state.withLock { $0.changes[stripe] }
    }

    /// The tag of the read `name` of `owner`, if one is kept for the configuration `generation` and holds at `now`.
    package func tag(_ owner: String, _ name: String, generation: UInt64, at now: Date) -> String? {
        let (name, half) = (Self.hash(name), capacity / 2)
        // A generation that went is freed here, after the lock.
        let (tag, gone) = state.withLock { $0.find(owner, name, half: half) }
        _ = gone
        guard let tag, tag.generation == generation, now < tag.until else { return nil }
        return tag.etag
    }

    /// Keeps the tag of the read `name` of `owner`, unless the owner changed since `stamp` was taken.
    package func put(_ owner: String, _ name: String, _ tag: Tag, stamp: UInt64) {
        let (stripe, name, half) = (Self.stripe(owner), Self.hash(name), capacity / 2)
        // A generation that went is freed here, after the lock.
        let gone: Generation? = state.withLock { state in
            guard state.changes[stripe] == stamp else { return nil }
            return state.keep(owner, name, tag, half: half)
        }
        _ = gone
    }

    /// The owners' rows changed (a commit): their tags go, and reads of them in flight keep nothing.
    package func changed(_ owners: Set<String>) {
        let stripes = owners.map(Self.stripe)
        state.withLock { state in
            for (owner, stripe) in zip(owners, stripes) {
                state.changes[stripe] &+= 1
                if let removed = state.young.removeValue(forKey: owner) { state.youngCount -= removed.count }
                if let removed = state.old.removeValue(forKey: owner) { state.oldCount -= removed.count }
            }
        }
    }

    /// How many tags are kept.
    package var count: Int { state.withLock { $0.youngCount + $0.oldCount } }
}
