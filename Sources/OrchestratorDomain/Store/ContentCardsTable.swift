import Foundation
import GRDB
import PartitionStore
import Shared

/// A card of a profile's feed, as stored.
struct StoredCard {
    var id: String
    /// `<project>/<card id>` of its definition.
    var cardKey: String
    var campaignKey: String
    var seq: Int64
    var language: String
    /// The rendered texts (`title`, `description`, `image_url`, `url`).
    var texts: [String: String]
    /// The digest of the definition it was rendered from (`ContentCardRenderer.digest`).
    var content: String
    /// The trigger it was delivered for (`TriggerContext.json`): a card whose definition changed is rendered anew
    /// with it.
    var context: JSONValue
    var createdAt: Date
    var updatedAt: Date
    var expiresAt: Date
    var viewed: Bool
    var clicked: Bool
    var dismissed: Bool

    init(row: Row) throws {
        id = row["card_id"]
        cardKey = row["card_key"]
        campaignKey = row["campaign_key"]
        seq = row["seq"]
        language = row["language"]
        var texts: [String: String] = [:]
        if case .object(let members)? = try? JSONParser.parse(Array((row["texts"] as String).utf8)) {
            for member in members { if case .string(let text) = member.value { texts[member.key] = text } }
        }
        self.texts = texts
        content = row["content"]
        context = (try? JSONParser.parse(Array((row["context"] as String).utf8))) ?? .null
        createdAt = try row.requiredTime("created_at")
        updatedAt = try row.requiredTime("updated_at")
        expiresAt = try row.requiredTime("expires_at")
        viewed = (row["viewed_at"] as String?) != nil
        clicked = (row["clicked_at"] as String?) != nil
        dismissed = (row["dismissed_at"] as String?) != nil
    }
}

/// `content_cards`: each profile's feed (docs/in-app.md, "Content cards"). A row per card delivered, under the id
/// the feed gives it; its view, click and dismissal are the profile's, whichever device reports them. Every change of
/// a row takes the next `seq` of the partition (`content_card_sequence`), so that an app's cursor sync reads only
/// what changed since its last. A row outlives its card by `retention` past the expiry: the card's "received"
/// record, so that a replayed trigger never delivers it again.
struct ContentCardsTable {
    let db: Database

    /// How long a card's row stays after it expired.
    static let retention: TimeInterval = 30 * 86_400

    init(_ db: Database) { self.db = db }

    /// The partition's next change number.
    private func nextSeq() throws -> Int64 {
        try db.executeCached(sql: "UPDATE content_card_sequence SET seq = seq + 1 WHERE id = 0")
        return try Int64.fetchOne(db.cachedStatement(sql: "SELECT seq FROM content_card_sequence WHERE id = 0")) ?? 0
    }

    /// Whether the profile ever received the card (its row, live, dismissed or expired, is still kept).
    func exists(_ key: String, cardID: String) throws -> Bool {
        try Bool.fetchOne(
            db.cachedStatement(sql: "SELECT 1 FROM content_cards WHERE profile_key = ? AND card_id = ?"), arguments: [key, cardID])
            ?? false
    }

    /// The profile's cards that count against its cap: neither dismissed nor expired at `now`.
    func liveCount(_ key: String, now: Date) throws -> Int {
        try Int.fetchOne(
            db.cachedStatement(
                sql: "SELECT count(*) FROM content_cards WHERE profile_key = ? AND dismissed_at IS NULL AND expires_at > ?"),
            arguments: [key, WireTime.format(now)]) ?? 0
    }

    func insert(
        _ key: String, cardID: String, cardKey: String, campaignKey: String, language: String, texts: [String: String],
        content: String, context: JSONValue, at time: Date, expiresAt: Date
    ) throws {
        let stamp = WireTime.format(time)
        let textsJSON = JSONValue.object(texts.sorted { $0.key < $1.key }.map { JSONMember($0.key, .string($0.value)) })
        try db.executeCached(
            sql: """
                INSERT INTO content_cards (profile_key, card_id, card_key, campaign_key, seq, language, texts, content, context,
                    created_at, updated_at, expires_at)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                """,
            arguments: [
                key, cardID, cardKey, campaignKey, try nextSeq(), language, textsJSON.serializedText, content, context.serializedText, stamp, stamp,
                WireTime.format(expiresAt),
            ])
    }

    func card(_ key: String, cardID: String) throws -> StoredCard? {
        try Row.fetchOne(
            db.cachedStatement(sql: "SELECT * FROM content_cards WHERE profile_key = ? AND card_id = ?"), arguments: [key, cardID]
        ).map(StoredCard.init(row:))
    }

    enum Mark: String {
        case viewed = "viewed_at"
        case clicked = "clicked_at"
        case dismissed = "dismissed_at"
    }

    /// Records the card's first view, click or dismissal (a change the feed's cursor shows); false when it was
    /// recorded before.
    func mark(_ key: String, cardID: String, _ mark: Mark, at time: Date) throws -> Bool {
        let stamp = WireTime.format(time)
        // The next change number is taken only by a change: a repeated report writes nothing (nor its changelog).
        try db.executeCached(
            sql: """
                UPDATE content_cards SET \(mark.rawValue) = ?, updated_at = ?,
                    seq = (SELECT seq + 1 FROM content_card_sequence WHERE id = 0)
                WHERE profile_key = ? AND card_id = ? AND \(mark.rawValue) IS NULL
                """, arguments: [stamp, stamp, key, cardID])
        guard db.changesCount == 1 else { return false }
        try db.executeCached(sql: "UPDATE content_card_sequence SET seq = seq + 1 WHERE id = 0")
        return true
    }

    /// The profile's cards in its feed now: neither dismissed nor expired at `now`.
    func live(_ key: String, now: Date) throws -> [StoredCard] {
        try Row.fetchAll(
            db.cachedStatement(
                sql: "SELECT * FROM content_cards WHERE profile_key = ? AND dismissed_at IS NULL AND expires_at > ? ORDER BY seq"),
            arguments: [key, WireTime.format(now)]
        ).map(StoredCard.init(row:))
    }

    /// The profile's cards changed after `seq`, in the order of their changes.
    func changed(_ key: String, after seq: Int64) throws -> [StoredCard] {
        try Row.fetchAll(
            db.cachedStatement(sql: "SELECT * FROM content_cards WHERE profile_key = ? AND seq > ? ORDER BY seq"),
            arguments: [key, seq]
        ).map(StoredCard.init(row:))
    }

    /// The profile's last change number (0: none).
    func lastSeq(_ key: String) throws -> Int64 {
        try Int64.fetchOne(db.cachedStatement(sql: "SELECT max(seq) FROM content_cards WHERE profile_key = ?"), arguments: [key]) ?? 0
    }

    /// Every card the profile received (live, dismissed, or expired and kept as its "received" record): what an
    /// anonymous profile hands on at its first identification.
    func history(_ key: String) throws -> [MergedHistory.Card] {
        try Row.fetchAll(db.cachedStatement(sql: "SELECT * FROM content_cards WHERE profile_key = ? ORDER BY seq"), arguments: [key])
            .map { row in
                MergedHistory.Card(
                    id: row["card_id"], cardKey: row["card_key"], campaignKey: row["campaign_key"], language: row["language"],
                    texts: row["texts"], content: row["content"], context: row["context"], createdAt: row["created_at"],
                    updatedAt: row["updated_at"], expiresAt: row["expires_at"], viewedAt: row["viewed_at"],
                    clickedAt: row["clicked_at"], dismissedAt: row["dismissed_at"])
            }
    }

    /// A card handed on by a profile merged into this one, under its id and with its views, clicks and dismissal, as
    /// this profile's next change (the apps' next sync shows it); nothing when the profile has a card of that id.
    func receive(_ key: String, _ card: MergedHistory.Card) throws {
        guard try !exists(key, cardID: card.id) else { return }
        try db.executeCached(
            sql: """
                INSERT INTO content_cards (profile_key, card_id, card_key, campaign_key, seq, language, texts, content, context,
                    created_at, updated_at, expires_at, viewed_at, clicked_at, dismissed_at)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                """,
            arguments: [
                key, card.id, card.cardKey, card.campaignKey, try nextSeq(), card.language, card.texts, card.content, card.context,
                card.createdAt, card.updatedAt, card.expiresAt, card.viewedAt, card.clickedAt, card.dismissedAt,
            ])
    }

    /// Deletes up to `limit` rows whose card expired before `cutoff`; returns how many.
    func prune(expiredBefore cutoff: Date, limit: Int) throws -> Int {
        try db.execute(
            sql: """
                DELETE FROM content_cards WHERE (profile_key, card_id) IN (
                    SELECT profile_key, card_id FROM content_cards WHERE expires_at < ? LIMIT ?)
                """, arguments: [WireTime.format(cutoff), limit])
        return db.changesCount
    }
}
