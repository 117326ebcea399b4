import Foundation
import GRDB
import HeraldTestSupport
import Ingest
import Shared
import Testing

@testable import PartitionStore
@testable import OrchestratorDomain

/// Rows per table that the retention bounds.
private func tableCounts(_ database: PartitionDatabase) async throws -> [String: Int] {
    try await database.read { db in
        var counts: [String: Int] = [:]
        for table in ["applied_records", "campaign_history", "timers", "push_changelog"] {
            counts[table] = try Int.fetchOne(db, sql: "SELECT count(*) FROM \(table)") ?? 0
        }
        counts["push_changelog_per_profile"] =
            try Int.fetchOne(db, sql: "SELECT max(n) FROM (SELECT count(*) AS n FROM push_changelog GROUP BY profile_key)") ?? 0
        return counts
    }
}

@Suite("Retention: the orchestrator's tables stay bounded", .serialized)
struct RetentionSoakTests {
    @Test("ten days of traffic on a frozen clock: ids, decisions, timers and the push changelog level off")
    func soak() async throws {
        let config = try configuration(
            demoProject, pushTemplate,
            #"{"kind":"campaign","id":"cart","project":"demo","trigger":{"event":"ADD_TO_CART"},"delay":"1h","reeligibility":"always","messages":[{"channel":"push","template":"cart"}]}"#,
            #"{"kind":"campaign","id":"daily","project":"demo","trigger":{"event":"OPENED"},"reeligibility":{"max":1,"per":"1d"},"messages":[{"channel":"push","template":"cart"}]}"#,
            #"{"kind":"campaign","id":"welcome","project":"demo","trigger":{"event":"OPENED"},"reeligibility":"once","messages":[{"channel":"push","template":"cart"}]}"#)
        let harness = try await EngagementHarness(config)
        let window: TimeInterval = 3 * 86_400
        let users = 20
        var days: [[String: Int]] = []
        var waitingDelays: [Int] = []
        var sequence = 0
        func event(_ name: String, user: Int, at: Date) throws -> KafkaRecord {
            guard case .valid(let event) = EventValidation.validate(
                try JSONParser.parse(Array(#"{"name":"\#(name)","attributes":{"product":"Skis"}}"#.utf8)), path: "e")
            else { preconditionFailure() }
            sequence += 1
            return harness.writer.record(.event, id: "e\(sequence)", customID: "u\(user)", at: at, fields: [JSONMember("event", event.json)])
        }
        func token(user: Int, at: Date) -> KafkaRecord {
            sequence += 1
            let value = String(format: "%064x", sequence)
            harness.writer.source = .app(id: "demo-ios", dev: false)
            defer { harness.writer.source = .server }
            return harness.writer.record(.pushToken, id: "t\(sequence)", customID: "u\(user)", installationID: "I\(user)", at: at, fields: push(value))
        }
        for day in 0..<10 {
            let start = t0 + Double(day) * 86_400
            harness.clock.set(start)
            var records: [KafkaRecord] = []
            for user in 0..<users {
                // Three carts (one delay waits), two opens (daily: once a day; welcome: once ever), eight new tokens.
                for minute in 0..<3 { records.append(try event("add_to_cart", user: user, at: start + Double(minute) * 60)) }
                for minute in 0..<2 { records.append(try event("opened", user: user, at: start + Double(minute) * 60)) }
                for minute in 0..<8 { records.append(token(user: user, at: start + Double(minute) * 60)) }
            }
            try await harness.apply(records)
            waitingDelays.append(try await tableCounts(harness.database)["timers"] ?? 0)
            try await harness.advance(to: start + 7200)
            // The retention round, as the orchestrator runs it, a minute after the delays' decisions.
            let now = harness.clock.now + 60
            try await harness.database.pruneApplied(before: now.addingTimeInterval(-window))
            _ = try await OrchestratorRetention.pruneCampaignHistory(harness.database, rules: harness.rules, now: now, dedupeWindow: window)
            days.append(try await tableCounts(harness.database))
        }
        // One delay waits per campaign and profile, not one per cart.
        #expect(waitingDelays.allSatisfy { $0 == users }, "\(waitingDelays)")
        #expect(days.last?["timers"] == 0)
        // Ids: three days of writes (13 per user and day). Decisions: cart and daily for three days, welcome once.
        #expect(days.last?["applied_records"] == 3 * 13 * users)
        #expect(days.last?["campaign_history"] == 3 * 2 * users + users)
        // The push changelog keeps the latest entries of each profile.
        #expect(days.last?["push_changelog_per_profile"] == PushChangelogTable.kept)
        // Level once the windows are past (the changelog fills its 50 per profile in seven days of 8 entries): the
        // retention keeps up with the traffic.
        for table in ["applied_records", "campaign_history", "push_changelog"] {
            #expect(days[6...].allSatisfy { $0[table] == days[6][table] }, "\(table): \(days.map { $0[table] ?? 0 })")
        }
        // Every welcome was sent once, every day's first open and every day's cart once.
        let sends = try harness.sends()
        #expect(sends.filter { $0.campaign == "welcome" }.count == users)
        #expect(sends.filter { $0.campaign == "daily" }.count == 10 * users)
        #expect(sends.filter { $0.campaign == "cart" }.count == 10 * users)
        // Each prune reads its index, not the whole table.
        let plans = try await harness.database.read { db in
            try [
                "SELECT project, record_id FROM applied_records WHERE applied_at < '' LIMIT 1",
                "SELECT campaign_key, profile_key, occurrence FROM campaign_history WHERE campaign_key = 'demo/cart' AND at < '' LIMIT 1",
            ].map { try String.fetchAll(db, sql: "EXPLAIN QUERY PLAN \($0)", adapter: ColumnMapping(["detail": "detail"])).joined(separator: "; ") }
        }
        #expect(plans[0].contains("INDEX applied_records_by_time"), "\(plans[0])")
        #expect(plans[1].contains("INDEX campaign_history_by_time"), "\(plans[1])")
    }
}
