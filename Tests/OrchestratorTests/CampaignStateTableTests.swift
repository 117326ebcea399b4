import Foundation
import GRDB
import HeraldTestSupport
import Shared
import Testing

@testable import OrchestratorDomain
import PartitionStore

/// `campaign_state` holds a schedule's last occurrence or a local-time schedule's last day in one column.
@Suite("Campaign state: a schedule's last run")
struct CampaignStateTableTests {
    @Test("an occurrence reads as a time and a day as a day; each is nil for the other kind (a campaign edited from one to the other)")
    func twoKinds() async throws {
        let database = try OrchestratorPartition.open(directory: temporaryDirectory(), partition: 0)
        let occurrence = try #require(WireTime.parse("2026-11-18T12:00:00.000Z"))
        let day = try #require(LocalDay("2026-11-18"))
        let read = try await database.write { db in
            let state = CampaignStateTable(db)
            try state.recordRun("demo/utc", occurrence: occurrence)
            try state.recordRun("demo/local", day: day)
            return (
                try state.lastOccurrence("demo/utc"), try state.lastDay("demo/utc"),
                try state.lastOccurrence("demo/local"), try state.lastDay("demo/local"), try state.lastOccurrence("demo/none")
            )
        }
        #expect(read.0 == occurrence && read.1 == nil)
        #expect(read.2 == nil && read.3 == day)
        #expect(read.4 == nil)
        try database.close()
    }
}
