import Foundation
import Liquid

/// `kind: content_card` (docs/in-app.md, "Content cards"): every field checked, with its file and line.
extension ConfigReader {
    static let contentCardFields = [
        "project", "name", "type", "categories", "pinned", "dismissible", "expires_after", "expires_at", "open_in_web_view",
        "extras", "variants", "action",
    ]

    mutating func contentCard(_ node: ConfigNode, id: String, project: String, origin: ConfigOrigin) -> ContentCardDefinition? {
        guard let typeText = string(node, "type") else { return nil }
        guard let kind = ContentCardDefinition.Kind(rawValue: typeText) else {
            let types = ContentCardDefinition.Kind.allCases.map(\.rawValue).joined(separator: ", ")
            fail(node["type"], "type: expected one of \(types), found \"\(typeText)\"")
            return nil
        }
        var categories: [String] = []
        if let categoriesNode = node["categories"] {
            if case .array(let items) = categoriesNode.value {
                for item in items {
                    guard case .string(let name) = item.value, ContentCardDefinition.categories.contains(name) else {
                        fail(item, "categories: expected \(ContentCardDefinition.categories.joined(separator: ", ")), found \(item.scalarText.map { "\"\($0)\"" } ?? item.typeName)")
                        continue
                    }
                    if !categories.contains(name) { categories.append(name) }
                }
            } else {
                fail(categoriesNode, "categories: expected a list such as [news, announcements]")
            }
        }
        var lifetime = ContentCardDefinition.defaultLifetime
        if node["expires_after"] != nil, let after = duration(node, "expires_after") {
            if after > ContentCardDefinition.maxLifetime {
                fail(node["expires_after"], "expires_after: at most 365d (a card lives a year at most)")
            } else {
                lifetime = after
            }
        }
        var expiresAt: Date?
        if let text = string(node, "expires_at", required: false) {
            if node["expires_after"] != nil { fail(node["expires_at"], "expires_at: give expires_after or expires_at, not both") }
            if let time = WireTime.parse(text) {
                expiresAt = time
            } else {
                fail(node["expires_at"], "expires_at: expected an ISO-8601 time such as 2026-12-31T23:00:00Z, found \"\(text)\"")
            }
        }
        var card = ContentCardDefinition(
            id: id, project: project, name: string(node, "name", required: false) ?? id, kind: kind, categories: categories,
            pinned: bool(node, "pinned", default: false), dismissible: bool(node, "dismissible", default: true),
            lifetime: lifetime, expiresAt: expiresAt, openInWebView: bool(node, "open_in_web_view", default: false),
            extras: extras(node["extras"]), variants: [:], origin: origin)
        if let node = node["action"] {
            if case .object = node.value { card.action = appAction(node, "action") } else {
                fail(node, "action: expected an action {id, args}, such as {id: batch.user.event, args: {e: CARD_TAPPED}}")
            }
        }
        card.variants = cardVariants(node, card: card)
        return card
    }

    /// Language → `title`, `description`, `image_url`, `url` as the type has them: Liquid over the profile and the
    /// trigger, rendered at delivery. A fixed URL is checked here; each variant's fixed text must fit in 2 KB.
    mutating func cardVariants(_ node: ConfigNode, card: ContentCardDefinition) -> [String: [String: TemplateText]] {
        guard let variantsNode = node["variants"], case .object(let languages) = variantsNode.value, !languages.isEmpty else {
            fail(node["variants"] ?? node, "variants: expected a mapping from language (or `default`) to the card's texts")
            return [:]
        }
        let (required, optional) = card.kind.fields
        var variants: [String: [String: TemplateText]] = [:]
        for (language, fieldsNode, fields) in variantLanguages(languages) {
            var texts: [String: TemplateText] = [:]
            for (name, value) in fields {
                let path = "variants.\(language).\(name)"
                guard required.contains(name) || optional.contains(name) else {
                    fail(value, "\(path): not a field of a \(card.kind.rawValue) card (\((required + optional).joined(separator: ", ")))")
                    continue
                }
                guard let text = templateText(value, path) else { continue }
                if name.hasSuffix("url"), text.isFixed, !Rules.isSafeURL(text.fixedText) {
                    fail(value, "\(path): expected a URL with a scheme and a host, such as https://example.com/sale (never \(Rules.unsafeSchemes.sorted().joined(separator: ", ")))")
                    continue
                }
                texts[name] = text
            }
            for name in required where texts[name] == nil && !fields.contains(where: { $0.key == name }) {
                fail(fieldsNode, "variants.\(language): missing `\(name)` (a \(card.kind.rawValue) card shows it)")
            }
            // What every rendering holds for sure: over the limit already, no profile can fit.
            let size = card.size(language: language, texts: texts.mapValues(\.fixedText))
            if size > ContentCardDefinition.maxBytes {
                fail(fieldsNode, "variants.\(language): the card is \(size) bytes as the app receives it; at most \(ContentCardDefinition.maxBytes)")
            }
            variants[language] = texts
        }
        return variants
    }
}
