import Foundation
import GRDB
import HeraldTestSupport
import Shared
import Testing

@testable import Notifier
@testable import PartitionStore

@Suite("Retention: the notifier's ledger stays bounded")
struct LedgerRetentionTests {
    @Test("ten days of sends on a frozen clock: finished targets and resolved sends level off; a replay within the window is still dropped")
    func soak() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("herald-ledger-\(UUID().uuidString)").path
        let database = try PartitionDatabase.open(directory: directory, partition: 0, migrator: NotifierSchema.migrator)
        defer { try? database.close() }
        let start = Date(timeIntervalSince1970: 1_795_000_000)
        let window: TimeInterval = 3 * 86_400
        var offset: Int64 = 0
        func record(_ topic: HeraldTopic, _ value: [UInt8]) -> KafkaRecord {
            defer { offset += 1 }
            return KafkaRecord(topic: topic.name, partition: 0, offset: offset, key: Array("demo/paul".utf8), value: value)
        }
        func apply(_ records: [KafkaRecord], now: Date) async throws {
            _ = try await database.applyBatch(records) { db, record in try NotifierApplier.apply(db, record: record, now: now) }
        }
        try await apply([record(.contacts, Array(contactJSON(installations: [installationJSON("i-ios")]).utf8))], now: start)
        let perDay = 40
        var rows: [(sends: Int, ledger: Int)] = []
        for day in 0..<10 {
            let now = start + Double(day) * 86_400
            try await apply(
                try (0..<perDay).map { record(.sendsPush, try Wire.encode(sendRequest(id: String(format: "%032x", day * perDay + $0)))) },
                now: now)
            let claimed = try await database.write { db in
                try SendClaims.claim(db, channel: .push, limit: perDay * 2, now: now, origins: ["demo/demo-ios": .app(.ios)]).claimed
            }
            #expect(claimed.count == perDay)
            try await database.write { db in
                _ = try AttemptResults.complete(
                    db, results: claimed.map { .init(claimed: $0, provider: "apns", outcome: .accepted(messageID: nil), finishedAt: now) },
                    retry: RetryPolicy())
            }
            let cutoff = now + 60 - window
            try await database.write { db in
                _ = try LedgerTable(db).pruneFinished(before: cutoff, limit: 1_000)
                _ = try SendsTable(db).pruneResolved(before: cutoff, limit: 1_000)
            }
            rows.append(try await database.read { db in
                (try Int.fetchOne(db, sql: "SELECT count(*) FROM sends") ?? 0, try Int.fetchOne(db, sql: "SELECT count(*) FROM ledger") ?? 0)
            })
        }
        // Three days of sends, one target each, from the third day on.
        #expect(rows[2...].allSatisfy { $0.sends == 3 * perDay && $0.ledger == 3 * perDay }, "\(rows)")
        // Within the window a replayed send is still dropped; past it, forgotten.
        let now = start + 9 * 86_400
        try await apply([record(.sendsPush, try Wire.encode(sendRequest(id: String(format: "%032x", 8 * perDay))))], now: now)
        try await apply([record(.sendsPush, try Wire.encode(sendRequest(id: String(format: "%032x", 0))))], now: now)
        let queued = try await database.read { db in try String.fetchAll(db, sql: "SELECT send_id FROM sends WHERE state = 'queued'") }
        #expect(queued == [String(format: "%032x", 0)])
        // Each prune reads its index, not the whole table.
        let plans = try await database.read { db in
            try [
                "SELECT send_id, target_id FROM ledger WHERE state IN ('sent', 'failed', 'suppressed') AND updated_at < '' LIMIT 1",
                "SELECT send_id FROM sends WHERE state = 'resolved' AND received_at < '' LIMIT 1",
            ].map { try String.fetchAll(db, sql: "EXPLAIN QUERY PLAN \($0)", adapter: ColumnMapping(["detail": "detail"])).joined(separator: "; ") }
        }
        #expect(plans[0].contains("INDEX ledger_finished"), "\(plans[0])")
        #expect(plans[1].contains("INDEX sends_resolved"), "\(plans[1])")
    }
}
