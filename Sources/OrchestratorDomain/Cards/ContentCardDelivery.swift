import Foundation
import GRDB
import Metrics
import Shared

/// A campaign's content card put into one profile's feed (docs/in-app.md, "Content cards"), under an id derived from
/// the campaign, the card's place in it, the profile and the trigger's occurrence (so that a replayed trigger finds
/// the card it delivered, even expired). Rendered whole and within 2 KB, or not delivered; not past the profile's
/// cap of live cards (`max_content_cards`).
struct ContentCardDelivery {
    let db: Database
    let config: HeraldConfiguration
    let now: Date

    enum Outcome: Equatable {
        case delivered(id: String)
        /// Delivered before (a replay).
        case repeated
        /// The profile's feed holds its cap of live cards.
        case capped
        /// The card's `expires_at` has passed: it would show nowhere.
        case expired
        case failed(String)
    }

    func deliver(
        _ card: ContentCardDefinition, campaign: CampaignDefinition, step: String, values: ProfileValues, _ context: TriggerContext
    ) throws -> Outcome {
        let key = values.key
        let id = MessageRenderer.sendID(campaign: campaign.key, step: step, profileKey: key, occurrence: context.occurrence)
        let table = ContentCardsTable(db)
        guard try !table.exists(key, cardID: id) else { return .repeated }
        let limit = config.projects[card.project]?.maxContentCards ?? ContentCardDefinition.defaultMaxPerProfile
        guard try table.liveCount(key, now: now) < limit else {
            Self.count(card, "capped")
            return .capped
        }
        let rendered: ContentCardRenderer.Rendered
        do {
            rendered = try ContentCardRenderer(config: config, now: now).render(card, values: values, context)
        } catch let error as TemplateError {
            Self.count(card, "render_failed")
            return .failed(error.message)
        }
        let expiresAt = card.expiry(deliveredAt: now)
        guard expiresAt > now else {
            Self.count(card, "expired")
            return .expired
        }
        let size = card.size(language: rendered.language, texts: rendered.texts)
        guard size <= ContentCardDefinition.maxBytes else {
            Self.count(card, "too_large")
            return .failed("content card \(card.id) is \(size) bytes rendered; at most \(ContentCardDefinition.maxBytes)")
        }
        try table.insert(
            key, cardID: id, cardKey: card.key, campaignKey: campaign.key, language: rendered.language, texts: rendered.texts,
            content: ContentCardRenderer.digest(card, config: config), context: context.json, at: now, expiresAt: expiresAt)
        Self.count(card, "delivered")
        return .delivered(id: id)
    }

    /// `herald_content_cards_total{card, event}`.
    static func count(_ card: String, _ event: String) {
        Counter(label: "herald_content_cards_total", dimensions: [("card", card), ("event", event)]).increment()
    }

    static func count(_ card: ContentCardDefinition, _ event: String) { count(card.key, event) }
}
