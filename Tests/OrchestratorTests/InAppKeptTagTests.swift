import Foundation
import GRDB
import HeraldTestSupport
import ServiceSupport
import Shared
import Synchronization
import Testing

@testable import Orchestrator
@testable import OrchestratorDomain
@testable import PartitionStore

/// A partition keeps the tag of each in-app answer it gave (`ReadTagCache`), so that a revalidation whose tag is
/// current is answered without reading; the tag is dropped when anything the answer reads changes. What matters: a
/// kept tag is always the tag a fresh read would give.
@Suite("In-app messages: kept tags")
struct InAppKeptTagTests {
    static func config(greeting: String = "Hi {{ c.first_name | default: \"you\" }}") throws -> HeraldConfiguration {
        try configuration([
            demoProject,
            #"{"kind":"segment","id":"gold","project":"demo","condition":"c.plan = \"gold\""}"#,
            #"{"kind":"segment","id":"recent","project":"demo","condition":"e.ADD_TO_CART.last > now - 2h"}"#,
            #"""
            {"kind":"in_app_message","id":"hello","project":"demo","type":"modal","priority":80,"reeligibility":"always",
             "triggers":[{"session_start":true}],
             "variants":{"default":{"message":\#(JSONValue.string(greeting).serializedText)},"fr":{"message":"Salut {{ c.first_name | default: \"toi\" }}"}}}
            """#,
            #"{"kind":"in_app_message","id":"vip","project":"demo","type":"slideup","audience":"gold","reeligibility":{"max":1,"per":"1d"},"triggers":[{"session_start":true}],"variants":{"default":{"message":"Gold"}}}"#,
            #"{"kind":"in_app_message","id":"cart","project":"demo","type":"slideup","audience":"recent","reeligibility":{"max":2,"per":"3h"},"triggers":[{"session_start":true}],"variants":{"default":{"message":"Your cart"}}}"#,
            #"{"kind":"in_app_message","id":"sale","project":"demo","type":"slideup","start":"\#(WireTime.format(t0 + 36_000))","end":"\#(WireTime.format(t0 + 108_000))","reeligibility":"always","triggers":[{"session_start":true}],"variants":{"default":{"message":"Sale"}}}"#,
        ])
    }

    static let syncs: [(key: String, installation: String)] = [
        ("demo/paul", "I"), ("demo/paul", "J"), ("demo/anna", "I"), ("demo/anna", "K"), ("demo/install/I", "I"),
    ]

    /// The answer a fresh read gives now (nil: the profile does not hold the installation).
    static func fresh(_ harness: EngagementHarness, _ key: String, _ installation: String) async throws -> InAppEligibility.Answer? {
        let (config, now) = (harness.rules.config, harness.clock.now)
        return try await harness.database.read { db in
            try InAppEligibility(db: db, config: config, now: now).answer(key: key, installationID: installation)
        }
    }

    /// A sync through the orchestrator's read (`OrchestratorPartitions.inAppAnswer`), revalidating `tag`.
    static func sync(_ harness: EngagementHarness, _ key: String, _ installation: String, revalidating tag: String?, after write: String? = nil)
        async throws -> AppRead<InAppEligibility.Answer>
    {
        try await OrchestratorPartitions.inAppAnswer(
            harness.database, tags: harness.database.readTags, rules: harness.rules, key: key, installationID: installation, after: write, ifNoneMatch: tag,
            now: harness.clock.now)
    }

    @Test("over seeded writes, moves, timers, time and configurations, a kept tag is always the one a fresh read gives")
    func keptTagsAreCurrent() async throws {
        let harness = try await EngagementHarness(try Self.config())
        let tags = try await harness.database.keepReadTags(owners: OrchestratorSchema.rowOwners, capacity: 1_000)
        harness.writer.source = .app(id: "ios", dev: false)
        try await harness.apply([
            harness.writer.record(.identify, id: "i1", customID: "paul", installationID: "I"),
            harness.writer.record(.identify, id: "i2", customID: "paul", installationID: "J"),
            harness.writer.record(.identify, id: "i3", customID: "anna", installationID: "K"),
        ])
        let configs = [harness.rules, EngagementRules(config: try Self.config(greeting: "Hello {{ c.first_name }}"), clock: harness.rules.clock)]
        var generator = SeededGenerator(seed: 35)
        func pick<T>(_ items: [T]) -> T { items[Int(generator.next() % UInt64(items.count))] }
        let edits = [
            #"{"first_name":"Paul"}"#, #"{"first_name":"Pól"}"#, #"{"first_name":null}"#, #"{"plan":"gold"}"#, #"{"plan":"free"}"#,
            #"{"shoe_size":40}"#, #"{"$language":"fr"}"#, #"{"$language":"en"}"#, #"{"$timezone":"Asia/Tokyo"}"#,
        ]
        var held: [String: String] = [:]
        /// Who each installation's app is logged in as.
        var holders: [String: String?] = ["I": "paul", "J": "paul", "K": "anna"]
        var (hits, checked, dropped) = (0, 0, 0)
        var steps: [String: Int] = [:]
        for step in 0..<240 {
            let now = harness.clock.now
            let custom = pick(["paul", "anna"])
            let kind = pick(["edit", "edit", "event", "impression", "impression", "move", "time", "time", "config", "delete", "none"])
            steps[kind, default: 0] += 1
            switch kind {
            case "edit":
                harness.writer.source = .server
                try await harness.apply([try harness.writer.update(id: "e\(step)", pick(edits), customID: custom, at: now)])
            case "event":
                harness.writer.source = .server
                try await harness.apply([
                    try harness.writer.event(id: "v\(step)", #"{"name":"add_to_cart","time":"\#(WireTime.format(now))"}"#, customID: custom, at: now)
                ])
            case "impression":
                harness.writer.source = .app(id: "ios", dev: false)
                let installation = pick(["I", "J", "K"])
                try await harness.apply([
                    harness.writer.record(
                        .inApp, id: "r\(step)", customID: holders[installation] ?? nil, installationID: installation, at: now,
                        fields: inAppReport("impression", pick(["hello", "vip", "cart", "sale"]), at: now))
                ])
            case "move":
                harness.writer.source = .app(id: "ios", dev: false)
                if generator.next() % 3 == 0 {
                    let from = (holders["I"] ?? nil).map(JSONValue.string) ?? .null
                    try await harness.apply([
                        harness.writer.record(.logout, id: "o\(step)", customID: nil, installationID: "I", fields: [JSONMember("from_custom_id", from)])
                    ])
                    holders["I"] = .some(nil)
                } else {
                    try await harness.apply([harness.writer.record(.identify, id: "m\(step)", customID: custom, installationID: "I")])
                    holders["I"] = custom
                }
            case "time":
                try await harness.advance(to: now + pick([1, 60, 1_800, 3_600, 10_800, 20_000]))
            case "config":
                harness.rules = harness.rules === configs[0] ? configs[1] : configs[0]
            case "delete":
                harness.writer.source = .server
                try await harness.apply([harness.writer.record(.profileDelete, id: "d\(step)", customID: custom, at: now)])
            default: break
            }
            for (key, installation) in Self.syncs {
                let fresh = try await Self.fresh(harness, key, installation)
                let name = "in-app \(installation)"
                if let kept = tags.tag(key, name, generation: harness.rules.generation, at: harness.clock.now) {
                    checked += 1
                    #expect(kept == fresh?.etag, "step \(step) (\(kind)): \(key) \(installation) kept a tag a read no longer gives")
                } else if held[name + key] != nil {
                    dropped += 1
                }
                // The app revalidates with the tag of its last answer.
                switch try await Self.sync(harness, key, installation, revalidating: held[name + key]) {
                case .answer(let answer):
                    #expect(answer.etag == fresh?.etag, "step \(step): \(key) \(installation)")
                    #expect((answer.json == nil) == (held[name + key] == answer.etag), "step \(step): \(key) \(installation)")
                    if answer.json == nil { hits += 1 }
                    held[name + key] = answer.etag
                case .notHeld:
                    #expect(fresh == nil, "step \(step): \(key) \(installation)")
                    held[name + key] = nil
                default: Issue.record("step \(step): \(key) \(installation) not answered")
                }
            }
        }
        // Not vacuous: many revalidations came from kept tags, and many kept tags were dropped by what changed.
        #expect(checked > 300 && dropped > 100 && hits > 300, "checked \(checked), dropped \(dropped), hits \(hits), steps \(steps)")
    }

    @Test("time alone: a kept tag holds until a start or end comes within 5 s or passes, or a cap's window ends")
    func timeAlone() async throws {
        let harness = try await EngagementHarness(try Self.config())
        let tags = try await harness.database.keepReadTags(owners: OrchestratorSchema.rowOwners, capacity: 1_000)
        harness.writer.source = .app(id: "ios", dev: false)
        try await harness.apply([
            harness.writer.record(.identify, id: "i1", customID: "paul", installationID: "I"),
            harness.writer.record(.inApp, id: "r1", installationID: "I", fields: inAppReport("impression", "vip", at: t0)),
        ])
        harness.writer.source = .server
        try await harness.apply([try harness.writer.update(id: "u1", #"{"plan":"gold"}"#)])
        // Each instant: whether the tag kept by a sync at the one before still holds there; when it does, it is the
        // tag a read gives, and when it does not, the read gives another.
        let instants: [(at: TimeInterval, holds: Bool)] = [
            (100, true), (35_994, true),  // the sale starts at 36,000 s: its start comes within 5 s at 35,995
            (35_996, false), (35_999, true), (36_000.5, false),  // started
            (86_398, true), (86_401, false),  // the vip impression at 0 leaves its one-day window
            (107_994, true), (107_996, false), (108_001, false),  // the sale ends at 108,000 s
        ]
        var last: String?
        for (offset, holds) in instants {
            harness.clock.set(t0 + offset)
            let kept = tags.tag("demo/paul", "in-app I", generation: harness.rules.generation, at: harness.clock.now)
            let fresh = try #require(try await Self.fresh(harness, "demo/paul", "I"))
            if last != nil {
                #expect((kept != nil) == holds, "at \(offset) s")
                #expect((fresh.etag == last) == holds, "at \(offset) s: the answer changed or not")
            }
            if let kept { #expect(kept == fresh.etag, "at \(offset) s") }
            guard case .answer(let answer) = try await Self.sync(harness, "demo/paul", "I", revalidating: last) else {
                Issue.record("no answer at \(offset) s")
                return
            }
            last = answer.etag
        }
    }

    @Test("every table an in-app answer reads has owners whose changes drop the tag")
    func readTablesAreOwned() async throws {
        let harness = try await EngagementHarness(try Self.config())
        harness.writer.source = .app(id: "ios", dev: false)
        try await harness.apply([
            harness.writer.record(.identify, id: "i1", customID: "paul", installationID: "I"),
            harness.writer.record(.inApp, id: "r1", customID: nil, installationID: "I", fields: inAppReport("impression", "vip", at: t0)),
        ])
        harness.writer.source = .server
        try await harness.apply([try harness.writer.update(id: "u1", #"{"plan":"gold","first_name":"Paul"}"#)])
        let (config, now) = (harness.rules.config, harness.clock.now)
        let read = try await harness.database.read { db -> (tables: Set<String>, owned: Set<String>, keyed: Set<String>) in
            let tables = Set(try String.fetchAll(db, sql: "SELECT name FROM sqlite_master WHERE type = 'table'"))
            let statements = Mutex<[String]>([])
            db.trace(options: .statement) { event in
                if case .statement(let statement) = event { statements.withLock { $0.append(statement.sql) } }
            }
            defer { db.trace(options: []) { _ in } }
            for (key, installation) in [("demo/paul", "I"), ("demo/install/I", "I"), ("demo/paul", "X")] {
                _ = try InAppEligibility(db: db, config: config, now: now).answer(key: key, installationID: installation)
            }
            let words = Set(statements.withLock { $0 }.joined(separator: " ").split(whereSeparator: { !$0.isLetter && !$0.isNumber && $0 != "_" }).map(String.init))
            // A row an INSERT OR REPLACE deletes is not seen (`RowChangeWatch`): a table read has its owner in its key.
            let keyed = try tables.intersection(words).filter { table in
                let key = try db.primaryKey(table).columns
                return key.contains("profile_key") || (table == "installation_links" && key == ["project", "installation_id"])
            }
            return (tables.intersection(words), try OrchestratorSchema.rowOwners.tables(db), Set(keyed))
        }
        #expect(read.tables.isSuperset(of: ["installations", "installation_links", "profiles", "segment_members", "in_app_impressions"]))
        #expect(read.tables.subtracting(read.owned).isEmpty, "read, without owners: \(read.tables.subtracting(read.owned))")
        #expect(read.tables == read.keyed, "read, without the owner in the key: \(read.tables.subtracting(read.keyed))")
        // The links' owner, written in SQL, is `ProfileKey.home`: the profile whose answers read the link.
        let linkOwner = RowOwners.key(InstallationLinksTable.ownerKey, of: "installation_links")
        let owner = try await harness.database.read { db in
            try String.fetchOne(db, sql: "SELECT \(linkOwner) FROM (SELECT 'demo' AS project, 'I-1' AS installation_id) AS installation_links")
        }
        #expect(owner == ProfileKey.home("demo", "I-1"))
    }

    @Test("a revalidation after the app's own write reads: the write is applied or pending, never answered from a kept tag")
    func afterWrite() async throws {
        let harness = try await EngagementHarness(try Self.config())
        try await harness.database.keepReadTags(owners: OrchestratorSchema.rowOwners, capacity: 1_000)
        harness.writer.source = .app(id: "ios", dev: false)
        try await harness.apply([harness.writer.record(.identify, id: "i1", customID: "paul", installationID: "I")])
        guard case .answer(let first) = try await Self.sync(harness, "demo/paul", "I", revalidating: nil) else {
            Issue.record("no answer")
            return
        }
        guard case .answer(let again) = try await Self.sync(harness, "demo/paul", "I", revalidating: first.etag) else {
            Issue.record("no answer")
            return
        }
        #expect(again.json == nil)
        // A write the orchestrator has not applied yet: the kept tag is not the answer.
        guard case .writePending = try await Self.sync(harness, "demo/paul", "I", revalidating: first.etag, after: "u1") else {
            Issue.record("the kept tag answered a sync after a write not applied")
            return
        }
    }
}
