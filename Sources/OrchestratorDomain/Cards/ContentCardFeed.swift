import Foundation
import GRDB
import Logging
import Shared

/// A profile's content card feed as an app syncs it (docs/in-app.md, "Content cards"; braze-rules 25), for one of the
/// installations the profile holds. Without a cursor, or with one from before the project's cards were edited, the
/// answer is the whole feed (`full`): the live cards, pinned first, then newest first. With a cursor, only what
/// changed since: cards delivered, viewed or clicked (on any device) after it, and the ids of those dismissed or
/// expired (`removed`), so that an empty answer is a few bytes and an answer grows with the changes, not the feed.
/// An expired or dismissed card is never returned; a card whose definition was edited after its delivery is rendered
/// anew from the edit, under the same id.
package struct ContentCardFeed {
    let db: Database
    let config: HeraldConfiguration
    let now: Date

    package init(db: Database, config: HeraldConfiguration, now: Date) {
        self.db = db
        self.config = config
        self.now = now
    }

    /// Where an app's feed stands: the last change it read, and the version of the project's card definitions it
    /// read them under (`<seq>-<16 hex>`).
    package struct Cursor: Sendable, Equatable {
        package var seq: Int64
        package var version: String

        package init(seq: Int64, version: String) {
            self.seq = seq
            self.version = version
        }

        package init?(_ text: String) {
            let parts = text.split(separator: "-", omittingEmptySubsequences: false)
            guard parts.count == 2, parts[0].count <= 18, parts[0].allSatisfy(\.isASCII), let seq = Int64(parts[0]), seq >= 0,
                parts[1].isLowercaseHex(count: 16)
            else { return nil }
            self.init(seq: seq, version: String(parts[1]))
        }

        package var text: String { "\(seq)-\(version)" }
    }

    /// The version of the project's card definitions (an edit of any changes it, and the next sync is whole).
    static func version(_ config: HeraldConfiguration, project: String) -> String {
        config.contentCardVersions[project] ?? String(repeating: "0", count: 16)
    }

    /// The answer for the installation under the profile `key`; nil when the profile does not hold it.
    package func answer(key: String, installationID: String, since: Cursor?) throws -> JSONValue? {
        guard try InstallationHolder.optedOut(db, key: key, installationID: installationID) != nil else { return nil }
        let project = ProfileKey.project(of: key)
        let version = Self.version(config, project: project)
        let table = ContentCardsTable(db)
        let full = since == nil || since?.version != version
        let rows = full ? try table.live(key, now: now) : try table.changed(key, after: since!.seq)
        var values: ProfileValues?
        var cards: [(pinned: Bool, created: Date, seq: Int64, json: JSONValue)] = []
        var removed: [JSONValue] = []
        for row in rows {
            guard !row.dismissed, row.expiresAt > now, let definition = config.contentCards[row.cardKey] else {
                removed.append(.string(row.id))
                continue
            }
            var language = row.language
            var texts = row.texts
            if row.content != ContentCardRenderer.digest(definition, config: config) {
                // Edited since its delivery: rendered anew, whole and within 2 KB, or left out.
                if values == nil { values = ProfileValues(db: db, key: key, defaultTimeZone: config.defaultTimeZone(project: project)) }
                guard let rendered = rerender(definition, row, values: values!) else {
                    removed.append(.string(row.id))
                    continue
                }
                (language, texts) = (rendered.language, rendered.texts)
            }
            let json = definition.card(
                id: row.id, language: language, texts: texts, createdAt: row.createdAt,
                updatedAt: row.updatedAt, expiresAt: row.expiresAt,
                viewed: row.viewed, clicked: row.clicked)
            cards.append((definition.pinned, row.createdAt, row.seq, json))
        }
        // Pinned first, then newest first (as delivered: a view does not move a card).
        cards.sort { ($0.pinned ? 1 : 0, $0.created, $0.seq) > ($1.pinned ? 1 : 0, $1.created, $1.seq) }
        let seq = max(since?.seq ?? 0, try table.lastSeq(key))
        var members: [JSONMember] = [
            JSONMember("cursor", .string(Cursor(seq: seq, version: version).text)), JSONMember("full", .bool(full)),
            JSONMember("cards", .array(cards.map(\.json))),
        ]
        if !full { members.append(JSONMember("removed", .array(removed))) }
        return .object(members)
    }

    private func rerender(_ definition: ContentCardDefinition, _ row: StoredCard, values: ProfileValues) -> ContentCardRenderer.Rendered? {
        let context = TriggerContext(json: row.context) ?? TriggerContext(type: .card, occurrence: row.id, at: now)
        do {
            let rendered = try ContentCardRenderer(config: config, now: now).render(definition, values: values, context)
            guard definition.size(language: rendered.language, texts: rendered.texts) <= ContentCardDefinition.maxBytes else {
                ContentCardDelivery.count(definition, "too_large")
                return nil
            }
            return rendered
        } catch {
            ContentCardDelivery.count(definition, "render_failed")
            RenderWarnings.warn(
                Logger(label: "herald.cards"), key: definition.key, "edited content card not rendered",
                metadata: ["card": "\(definition.key)", "card_id": "\(row.id)", "error": "\(error)"])
            return nil
        }
    }
}
