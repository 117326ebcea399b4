import Foundation
import Liquid

/// A push variant's `story` (docs/push-stories.md): its pages become the variant's fields `story.<n>.<field>`.
extension ConfigReader {
    /// The fields of `story`, a list of at least two pages, each `{image_url, title, subtitle?, deeplink?, image_type?,
    /// title_align?, subtitle_align?, id?}`. What is fixed is checked now: an image that is not HTTPS, an alignment, an
    /// image type, a page id (unique in the story; `page-<n>` by default). Paths are `<path>.<n>.<field>`, as the
    /// rendered fields are named.
    mutating func storyFields(_ node: ConfigNode, _ path: String) -> [String: TemplateText] {
        guard case .array(let items) = node.value, items.count >= PushStory.minPages else {
            let found = if case .array(let items) = node.value { "\(items.count) page(s)" } else { node.typeName }
            fail(node, "\(path): expected a list of at least \(PushStory.minPages) pages ({image_url, title, subtitle, deeplink}), found \(found)")
            return [:]
        }
        var texts: [String: TemplateText] = [:]
        var ids: [String: Int] = [:]
        for (index, item) in items.enumerated() {
            let number = index + 1
            let pagePath = "\(path).\(number)"
            guard case .object = item.value else {
                fail(item, "\(pagePath): expected a page {image_url, title, subtitle, deeplink}, found \(item.typeName)")
                continue
            }
            rejectUnknown(item, allowed: PushStory.textFields + PushStory.literalFields, pagePath)
            for name in PushStory.requiredFields where item[name] == nil { fail(item, "\(pagePath): missing `\(name)`") }
            for (name, value) in item.members where PushStory.textFields.contains(name) {
                guard let text = templateText(value, "\(pagePath).\(name)") else { continue }
                if name == "image_url", let problem = Self.fixedImageProblem(text) {
                    fail(value, "\(pagePath).image_url: \(problem)")
                    continue
                }
                texts[PushStory.field(number, name)] = text
            }
            for (name, value) in item.members where PushStory.literalFields.contains(name) {
                guard let literal = value.scalarText else {
                    fail(value, "\(pagePath).\(name): expected a string, found \(value.typeName)")
                    continue
                }
                if let problem = PushStory.literalProblem(name, literal) {
                    fail(value, "\(pagePath).\(name): \(problem)")
                    continue
                }
                texts[PushStory.field(number, name)] = TemplateText(literal: literal)
            }
            let id = texts[PushStory.field(number, "id")]?.source ?? "page-\(number)"
            if let first = ids[id] {
                fail(item["id"] ?? item, "\(pagePath).id: \"\(id)\" is already page \(first)'s id (a tap reports the page by it)")
            }
            ids[id] = ids[id] ?? number
            texts[PushStory.field(number, "id")] = TemplateText(literal: id)
            // Without a type, the image URL's extension must say it; a URL written in full is checked now.
            if texts[PushStory.field(number, "image_type")] == nil, let image = texts[PushStory.field(number, "image_url")],
                image.isFixed, PushStory.imageType(url: image.source) == nil
            {
                fail(
                    item["image_url"],
                    "\(pagePath).image_url: its path ends in none of \(PushStory.imageTypes.sorted().joined(separator: ", ")); set `image_type`")
            }
        }
        return texts
    }

    /// Why an image URL is refused before any rendering: written in full and not an HTTPS URL, or starting with another
    /// scheme (`http://{{…}}`).
    static func fixedImageProblem(_ text: TemplateText) -> String? {
        if text.isFixed { return PushStory.httpsProblem(text.source) }
        let start = text.source.prefix(8).lowercased()
        if start.hasPrefix("http://") || (start.contains("://") && !start.hasPrefix("https://")) {
            return PushStory.httpsProblem(text.source)
        }
        return nil
    }
}

extension ConfigReader {
    /// The variant's fields a story goes with: its fallback alert (`title`, `body`, `sound`, `badge`), its link and
    /// category, and how it is delivered. The others are an alert's, which a background push does not carry.
    static let storyVariantFields: Set<String> = [
        "story", "title", "body", "sound", "badge", "deeplink", "category", "collapse_id", "push_type", "priority", "ttl",
    ]

    /// What a variant with a `story` must and must not have: the fallback alert's `title` and `body`; delivered as a
    /// background push (`push_type` background or unset, `priority` normal or unset); no field the story leaves out.
    mutating func storyVariantProblems(_ fields: [(key: String, node: ConfigNode)], _ node: ConfigNode, _ path: String) {
        for name in ["title", "body"] where fields.allSatisfy({ $0.key != name }) {
            fail(node, "\(path): missing `\(name)` (a story's fallback alert, shown while its images load or if they fail)")
        }
        for (name, value) in fields {
            if !Self.storyVariantFields.contains(name) {
                fail(value, "\(path).\(name): not sent with a story (a background push); a story takes \(Self.storyVariantFields.sorted().joined(separator: ", "))")
            } else if name == "push_type", value.scalarText != "background" {
                fail(value, "\(path).push_type: a story is a background push (the app's SDK posts it once its images are in)")
            } else if name == "priority", value.scalarText == "high" {
                fail(value, "\(path).priority: a story is a background push, which goes at `priority: normal` (APNs refuses high)")
            }
        }
    }
}
