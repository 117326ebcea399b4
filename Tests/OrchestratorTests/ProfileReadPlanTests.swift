import GRDB
import HeraldTestSupport
import PartitionStore
import Testing

@testable import OrchestratorDomain

/// An export or an erasure reads one person's rows: through an index in every table, whatever the partition holds of
/// everyone else (docs/data-rights.md, "Export").
@Suite("Orchestrator: one person's rows are found through an index")
struct OrchestratorProfileReadPlanTests {
    @Test("every table with a profile_key, and the profiles an email, a phone number, an installation or an alias reaches")
    func indexed() async throws {
        let database = try PartitionDatabase.open(directory: temporaryDirectory(), partition: 0, migrator: OrchestratorSchema.migrator)
        let (scanned, plans) = try await database.read { db in
            let lookups: [(String, StatementArguments)] = [
                (ProfileLookup.byEmail, ["demo", "p@example.com"]), (ProfileLookup.byPhone, ["demo", "+33612345678"]),
                (ProfileLookup.byInstallation, ["demo", "I-1"]), (ProfileLookup.byAlias, ["crm", "42", "demo/", "demo/"]),
            ]
            return (try tablesScannedForOneProfile(db), try lookups.map { ($0.0, try queryPlan(db, $0.0, $0.1)) })
        }
        #expect(scanned == [])
        for (sql, plan) in plans { #expect(!plan.contains { $0.hasPrefix("SCAN") }, "\(sql): \(plan)") }
        try database.close()
    }
}
