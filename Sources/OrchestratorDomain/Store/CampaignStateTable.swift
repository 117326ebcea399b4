import Foundation
import GRDB
import PartitionStore
import Shared

/// `campaign_state`: a scheduled campaign's last finished run in this partition (an instant, or a local-time
/// schedule's day).
struct CampaignStateTable {
    let db: Database

    init(_ db: Database) { self.db = db }

    /// A schedule's last run: its occurrence. nil also when the row holds a day: the campaign was a local-time schedule
    /// until an edit (and `lastDay` is nil for an occurrence, the other way round).
    func lastOccurrence(_ campaign: String) throws -> Date? {
        try String.fetchOne(db, sql: "SELECT last_occurrence FROM campaign_state WHERE campaign_key = ?", arguments: [campaign])
            .flatMap(WireTime.parse)
    }

    /// A local-time schedule's last run: its day.
    func lastDay(_ campaign: String) throws -> LocalDay? {
        try String.fetchOne(db, sql: "SELECT last_occurrence FROM campaign_state WHERE campaign_key = ?", arguments: [campaign])
            .flatMap(LocalDay.init)
    }

    func recordRun(_ campaign: String, occurrence: Date) throws {
        try recordRun(campaign, WireTime.format(occurrence))
    }

    func recordRun(_ campaign: String, day: LocalDay) throws {
        try recordRun(campaign, day.description)
    }

    private func recordRun(_ campaign: String, _ occurrence: String) throws {
        try db.executeCached(
            sql: """
                INSERT INTO campaign_state (campaign_key, last_occurrence) VALUES (?, ?)
                ON CONFLICT (campaign_key) DO UPDATE SET last_occurrence = excluded.last_occurrence
                """, arguments: [campaign, occurrence])
    }
}
