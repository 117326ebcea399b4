import Foundation
import Shared
import Testing

@Suite("RecentDecodes: a decoding kept for its very bytes")
struct RecentDecodesTests {
    @Test("a value is returned only for the bytes it was decoded from, and a key remembered again answers for its new bytes")
    func sameBytesOnly() {
        let cache = RecentDecodes<Int>(capacity: 4)
        cache.remember(1, for: "a", decodedFrom: Array("one".utf8))
        #expect(cache.value(for: "a", bytes: Array("one".utf8)) == 1)
        #expect(cache.value(for: "a", bytes: Data("one".utf8)) == 1)
        #expect(cache.value(for: "a", bytes: Array("two".utf8)) == nil)
        #expect(cache.value(for: "a", bytes: Array("on".utf8)) == nil)
        #expect(cache.value(for: "a", bytes: [UInt8]()) == nil)
        #expect(cache.value(for: "b", bytes: Array("one".utf8)) == nil)
        cache.remember(2, for: "a", decodedFrom: Array("two".utf8))
        #expect(cache.value(for: "a", bytes: Array("one".utf8)) == nil)
        #expect(cache.value(for: "a", bytes: Array("two".utf8)) == 2)
        cache.remember(0, for: "empty", decodedFrom: [])
        #expect(cache.value(for: "empty", bytes: [UInt8]()) == 0)
    }

    @Test("past its capacity the oldest key goes first; a key remembered again counts from then")
    func bounded() {
        let cache = RecentDecodes<Int>(capacity: 3)
        cache.remember(0, for: "a", decodedFrom: Array("a".utf8))
        cache.remember(1, for: "b", decodedFrom: Array("b".utf8))
        cache.remember(10, for: "a", decodedFrom: Array("a".utf8))
        cache.remember(2, for: "c", decodedFrom: Array("c".utf8))
        // Four remembered in three places: the oldest was "a"'s first, which "a" replaced since; all three are held.
        #expect(cache.value(for: "a", bytes: Array("a".utf8)) == 10)
        #expect(cache.value(for: "b", bytes: Array("b".utf8)) == 1)
        #expect(cache.value(for: "c", bytes: Array("c".utf8)) == 2)
        cache.remember(3, for: "d", decodedFrom: Array("d".utf8))
        // Now "b" is the oldest.
        #expect(cache.value(for: "b", bytes: Array("b".utf8)) == nil)
        #expect(cache.value(for: "a", bytes: Array("a".utf8)) == 10)
        #expect(cache.value(for: "d", bytes: Array("d".utf8)) == 3)
        for index in 0..<3 { cache.remember(100 + index, for: "k\(index)", decodedFrom: [UInt8(index)]) }
        #expect(["a", "c", "d"].allSatisfy { cache.value(for: $0, bytes: Array($0.utf8)) == nil })
        #expect((0..<3).allSatisfy { cache.value(for: "k\($0)", bytes: [UInt8($0)]) == 100 + $0 })
    }
}
