import Foundation
import GRDB
import PartitionStore
import Shared

/// `campaign_pace`: when a rate-limited campaign's next page of recipients may be decided in this partition
/// (docs/campaigns.md, "Send rate limits"), shared by all its runs.
struct CampaignPaceTable {
    let db: Database

    init(_ db: Database) { self.db = db }

    func next(_ campaign: String) throws -> Date? {
        try String.fetchOne(
            db.cachedStatement(sql: "SELECT next_at FROM campaign_pace WHERE campaign_key = ?"), arguments: [campaign]
        ).flatMap(WireTime.parse)
    }

    func setNext(_ campaign: String, at next: Date) throws {
        try db.executeCached(
            sql: """
                INSERT INTO campaign_pace (campaign_key, next_at) VALUES (?, ?)
                ON CONFLICT (campaign_key) DO UPDATE SET next_at = excluded.next_at
                """, arguments: [campaign, WireTime.format(next)])
    }
}
