import Foundation
import GRDB
import HeraldTestSupport
import PartitionStore
import Testing

@testable import Notifier

/// An export or an erasure reads one person's rows: through an index in every table, whatever the partition holds of
/// everyone else (docs/data-rights.md, "Export").
@Suite("Notifier: one person's rows are found through an index")
struct NotifierProfileReadPlanTests {
    @Test("every table with a profile_key, and the contacts by email and by phone number")
    func indexed() async throws {
        let database = try PartitionDatabase.open(
            directory: FileManager.default.temporaryDirectory.appendingPathComponent("herald-plan-\(UUID().uuidString)").path, partition: 0, migrator: NotifierSchema.migrator)
        let (scanned, plans) = try await database.read { db in
            let plans = try NotifierPartitions.contactLookups(project: "demo", email: "p@example.com", phone: "+33612345678").map {
                ($0.sql, try queryPlan(db, $0.sql, $0.arguments))
            }
            return (try tablesScannedForOneProfile(db), plans)
        }
        #expect(scanned == [])
        #expect(plans.count == 2)
        for (sql, plan) in plans { #expect(!plan.contains { $0.hasPrefix("SCAN") }, "\(sql): \(plan)") }
        try database.close()
    }
}
