import Foundation

/// What has its texts per language (a template, an in-app message, a content card): language (ISO 639-1, or
/// `default`) → field → text, and the choice of a profile's variant.
package protocol LanguageVariants {
    var variants: [String: [String: TemplateText]] { get }
}

extension LanguageVariants {
    /// The variant for `language`: its own, else `default`, else the project's default language (`fallback`).
    package func variant(language: String?, fallback: String) -> (language: String, fields: [String: TemplateText])? {
        for candidate in [language, "default", fallback].compactMap({ $0 }) {
            if let fields = variants[candidate] { return (candidate, fields) }
        }
        return nil
    }

    /// Every variant's text with where it is (`variants.en.body`), in a fixed order.
    package var variantTexts: [(field: String, text: TemplateText)] {
        var texts: [(field: String, text: TemplateText)] = []
        for (language, fields) in variants.sorted(by: { $0.key < $1.key }) {
            for (name, text) in fields.sorted(by: { $0.key < $1.key }) { texts.append(("variants.\(language).\(name)", text)) }
        }
        return texts
    }
}
