import Foundation
import GRDB
import HeraldTestSupport
import Testing

@testable import PartitionStore

/// A partition database keeps the tags of its last answers under their owners (`ReadTagCache`), and drops them when a
/// committed transaction changes a row of the owner (`RowChangeWatch`).
@Suite("Read tags")
struct ReadTagCacheTests {
    /// Now: the cache drops expired tags by the real clock.
    static let now = Date()

    static func tag(_ etag: String, until: TimeInterval = 60, generation: UInt64 = 1) -> ReadTagCache.Tag {
        ReadTagCache.Tag(etag: etag, until: now.addingTimeInterval(until), generation: generation)
    }

    @Test("a tag holds for its configuration, until its instant, until its owner changes")
    func holding() {
        let cache = ReadTagCache(capacity: 100)
        cache.put("a", "r", Self.tag("t1"), stamp: cache.stamp("a"))
        cache.put("b", "r", Self.tag("t2"), stamp: cache.stamp("b"))
        #expect(cache.tag("a", "r", generation: 1, at: Self.now) == "t1")
        #expect(cache.tag("a", "other read", generation: 1, at: Self.now) == nil)
        #expect(cache.tag("a", "r", generation: 2, at: Self.now) == nil)
        #expect(cache.tag("a", "r", generation: 1, at: Self.now.addingTimeInterval(59.999)) == "t1")
        #expect(cache.tag("a", "r", generation: 1, at: Self.now.addingTimeInterval(60)) == nil)
        cache.changed(["a"])
        #expect(cache.tag("a", "r", generation: 1, at: Self.now) == nil)
        #expect(cache.tag("b", "r", generation: 1, at: Self.now) == "t2")
        #expect(cache.count == 1)
    }

    @Test("a read that began before its owner changed keeps nothing")
    func stamps() {
        let cache = ReadTagCache(capacity: 100)
        let before = cache.stamp("a")
        let other = cache.stamp("b")
        cache.changed(["a"])
        cache.put("a", "r", Self.tag("stale"), stamp: before)
        #expect(cache.tag("a", "r", generation: 1, at: Self.now) == nil)
        // Another owner's change does not matter (unless they share a stripe, which only costs a read).
        let collides = ReadTagCache.stripe("a") == ReadTagCache.stripe("b")
        cache.put("b", "r", Self.tag("fresh"), stamp: other)
        #expect(cache.tag("b", "r", generation: 1, at: Self.now) == (collides ? nil : "fresh"))
        cache.put("a", "r", Self.tag("fresh"), stamp: cache.stamp("a"))
        #expect(cache.tag("a", "r", generation: 1, at: Self.now) == "fresh")
    }

    @Test("past its capacity, the older half goes whole: at most the capacity is kept, and the newest half always")
    func capacity() {
        let cache = ReadTagCache(capacity: 10)
        for owner in 0..<25 {
            cache.put("o\(owner)", "r", Self.tag("t\(owner)"), stamp: cache.stamp("o\(owner)"))
            #expect(cache.count <= 10)
        }
        for owner in 20..<25 { #expect(cache.tag("o\(owner)", "r", generation: 1, at: Self.now) == "t\(owner)") }
        #expect(cache.tag("o0", "r", generation: 1, at: Self.now) == nil)
        // A tag put again moves to the young half (its old copy goes), and a change drops it from either half.
        cache.put("o20", "r", Self.tag("again"), stamp: cache.stamp("o20"))
        #expect(cache.tag("o20", "r", generation: 1, at: Self.now) == "again")
        cache.changed(["o20", "o24"])
        #expect(cache.tag("o20", "r", generation: 1, at: Self.now) == nil && cache.tag("o24", "r", generation: 1, at: Self.now) == nil)
        #expect(cache.count <= 10)
    }

    @Test("a tag asked for outlives the turn that drops the tags nobody asked for")
    func askedForStays() {
        let cache = ReadTagCache(capacity: 10)
        func put(_ owner: String) { cache.put(owner, "r", Self.tag(owner), stamp: cache.stamp(owner)) }
        for owner in ["a0", "a1", "a2", "a3", "a4", "b0"] { put(owner) }  // b0 turned the a's into the old half
        #expect(cache.tag("a0", "r", generation: 1, at: Self.now) == "a0")  // asked for: back in the young half
        for owner in ["b1", "b2", "b3", "b4"] { put(owner) }  // b4 turned again: the old half went
        #expect(cache.tag("a0", "r", generation: 1, at: Self.now) == "a0")
        #expect(cache.tag("a1", "r", generation: 1, at: Self.now) == nil)
        #expect(cache.count <= 10)
    }

    static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("core") { db in
            try db.execute(sql: PartitionDatabase.coreTablesSQL + """
                CREATE TABLE items (owner TEXT NOT NULL, name TEXT NOT NULL, value TEXT, PRIMARY KEY (owner, name));
                CREATE TABLE links (project TEXT NOT NULL, id TEXT NOT NULL, target TEXT, PRIMARY KEY (project, id));
                CREATE TABLE unowned (id INTEGER PRIMARY KEY, value TEXT);
                """)
        }
        return migrator
    }

    static let owners = RowOwners(column: "owner", expressions: ["links": "row.project || '/home/' || row.id"])

    /// Keeps a tag for each of `owners` in `cache`.
    static func keep(_ cache: ReadTagCache, _ owners: [String]) {
        for owner in owners { cache.put(owner, "r", tag("t-\(owner)"), stamp: cache.stamp(owner)) }
    }

    static func kept(_ cache: ReadTagCache, _ owners: [String]) -> [String] {
        owners.filter { cache.tag($0, "r", generation: 1, at: now) != nil }
    }

    @Test("a commit drops the tags of every owner whose rows it inserted, updated (before and after) or deleted")
    func watch() async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        for changelog in [nil, "state"] as [String?] {
            let database = try PartitionDatabase.open(
                directory: directory, partition: changelog == nil ? 0 : 1, migrator: Self.migrator, changelog: changelog)
            defer { try? database.close() }
            let cache = try await database.keepReadTags(owners: Self.owners, capacity: 100)
            #expect(try await database.keepReadTags(owners: Self.owners, capacity: 100) === cache)
            #expect(database.readTags === cache)
            let all = ["a", "b", "c", "p/home/i"]
            func expectKept(after sql: String, _ expected: [String], _ comment: Comment) async throws {
                Self.keep(cache, all)
                try await database.write { try $0.execute(sql: sql) }
                #expect(Self.kept(cache, all) == expected, comment)
            }
            try await expectKept(after: "INSERT INTO items VALUES ('a', 'x', '1'), ('b', 'x', '1')", ["c", "p/home/i"], "inserts")
            try await expectKept(after: "UPDATE items SET value = '2' WHERE owner = 'a'", ["b", "c", "p/home/i"], "an update")
            try await expectKept(after: "UPDATE items SET owner = 'c' WHERE owner = 'b'", ["a", "p/home/i"], "a row moved")
            try await expectKept(after: "DELETE FROM items WHERE owner = 'a'", ["b", "c", "p/home/i"], "a delete")
            try await expectKept(after: "INSERT INTO links VALUES ('p', 'i', 'x')", ["a", "b", "c"], "an owner by expression")
            try await expectKept(after: "INSERT INTO unowned (value) VALUES ('x')", all, "a table without owners")
            // A transaction rolled back changed nothing.
            Self.keep(cache, all)
            await #expect(throws: DatabaseError.self) {
                try await database.write { db in
                    try db.execute(sql: "INSERT INTO items VALUES ('a', 'y', '1')")
                    try db.execute(sql: "INSERT INTO items VALUES ('a', 'y', '1')")
                }
            }
            #expect(Self.kept(cache, all) == all, "a rollback")
            try await expectKept(after: "INSERT INTO items VALUES ('a', 'y', '1')", ["b", "c", "p/home/i"], "after a rollback")
        }
    }

    @Test("the owned tables: those with the owner column, and those given an expression")
    func ownedTables() async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let database = try PartitionDatabase.open(directory: directory, partition: 0, migrator: Self.migrator)
        defer { try? database.close() }
        #expect(try await database.read { try Self.owners.tables($0) } == ["items", "links"])
    }
}
