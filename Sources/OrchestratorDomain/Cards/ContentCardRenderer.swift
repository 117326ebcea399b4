import Foundation
import Liquid
import Shared

/// A content card rendered for one profile and trigger: its texts, whole (a value missing without a default fails the
/// card: it is never delivered half-rendered), in the profile's language, and the card as the app receives it within
/// 2 KB (`ContentCardDefinition.maxBytes`).
struct ContentCardRenderer {
    let config: HeraldConfiguration
    let now: Date

    struct Rendered {
        var language: String
        var texts: [String: String]
    }

    /// The digest of what delivered cards show of a definition (an edit that changes it renders them anew).
    static func digest(_ card: ContentCardDefinition, config: HeraldConfiguration) -> String {
        config.contentCardDigests[card.key] ?? ContentCardDefinition.digest(card.content)
    }

    func render(_ card: ContentCardDefinition, values: ProfileValues, _ context: TriggerContext) throws -> Rendered {
        let fallback = config.defaultLanguage(project: card.project)
        guard let variant = card.variant(language: values.language, fallback: fallback) else {
            throw TemplateError("content card \(card.id) has no variant for \(values.language ?? "no language"), default or \(fallback)")
        }
        let (variables, options) = MessageRenderer.environment(
            Array(variant.fields.values), config: config, project: card.project,
            MessageContext(values: values, context: context, campaign: nil, step: "card"), now: now)
        var texts = try FieldRendering.render(
            variant.fields, prefix: "\(card.id).\(variant.language)", variables: variables, options: { _ in options },
            check: { name, url in
                name.hasSuffix("url") && !url.isEmpty && !Rules.isSafeURL(url)
                    ? "not a URL an app may open once rendered" : nil
            })
        // An empty URL is no URL (`{% if %}` around one): the card is then not clickable.
        for name in ["url", "image_url"] where texts[name]?.isEmpty == true { texts[name] = nil }
        return Rendered(language: variant.language, texts: texts)
    }
}
