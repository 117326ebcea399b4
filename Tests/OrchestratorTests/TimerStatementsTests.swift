import Foundation
import GRDB
import GRDBSQLite
import HeraldTestSupport
import Shared
import Testing

@testable import OrchestratorDomain
@testable import PartitionStore

/// `timers` has a partial index (`timers_held`, `WHERE kind = 'quiet'`). SQLite re-prepares a statement at every run
/// when a bound parameter decides whether such an index applies, so that a `kind = ?` turned every timer read and
/// delete of a write into a compilation: the kinds are literals in the statements' text instead.
@Suite("Timer statements: compiled once")
struct TimerStatementsTests {
    @Test("every kind's raw value is a lower-case word, safe as an SQL literal")
    func literals() {
        for kind in TimerKind.allCases {
            #expect(!kind.rawValue.isEmpty && kind.rawValue.allSatisfy { ("a"..."z").contains($0) || $0 == "_" })
            #expect(kind.literal == "'\(kind.rawValue)'")
        }
    }

    @Test("the timers' statements run again without being prepared again")
    func noReprepare() async throws {
        let database = try OrchestratorPartition.open(directory: temporaryDirectory(), partition: 0)
        let reprepared = try await database.write { db -> [String: Int32] in
            let timers = TimersTable(db)
            for round in 0..<3 {
                for kind in TimerKind.allCases {
                    try timers.set(key: "demo/u\(round)", kind: kind, ref: "demo/c \(round)", due: WireTime.parse("2026-11-28T00:00:00.000Z")!)
                    _ = try timers.exists(key: "demo/u\(round)", kind: kind, ref: "demo/c \(round)")
                    _ = try timers.campaignTimer(kind, ref: "demo/c \(round)")
                }
                _ = try timers.segmentTimers(key: "demo/u\(round)")
                _ = try timers.isDelayWaiting(key: "demo/u\(round)", campaign: "demo/c", except: "x")
                _ = try timers.cancelWaiting(key: "demo/u\(round)", campaign: "demo/c")
                for timer in try timers.due(at: Date(timeIntervalSince1970: 1_900_000_000), limit: 100) { try timers.delete(timer) }
                try timers.deleteCampaignTimer(.schedule, ref: "demo/c \(round)")
            }
            var counts: [String: Int32] = [:]
            var statement = sqlite3_next_stmt(db.sqliteConnection, nil)
            while let current = statement {
                let sql = String(cString: sqlite3_sql(current))
                if sql.contains("timers") { counts[sql] = sqlite3_stmt_status(current, SQLITE_STMTSTATUS_REPREPARE, 0) }
                statement = sqlite3_next_stmt(db.sqliteConnection, current)
            }
            return counts
        }
        #expect(reprepared.count >= 8)
        #expect(reprepared.filter { $0.value > 0 } == [:])
    }
}
