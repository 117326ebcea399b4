import Foundation

/// A Push Story (braze-rules §5.8, docs/push-stories.md): pages that a notification content extension shows one after
/// the other, each an image with a title, a subtitle and a link, delivered as a background push that the app's SDK
/// turns into a notification of the story's category, with the template's title and body as the fallback alert.
///
/// A template writes its pages under `story` in each variant; Herald keeps them as fields named `story.<n>.<field>`
/// (`n` from 1), as in-app messages keep `button.<id>`, so that they render, fail and are named like any other field.
/// The rendered pages travel in the send's content and the notifier lays them out (`PushStoryPayload`).
package enum PushStory {
    /// A page's fields: templates, and literals with a fixed form.
    package static let textFields = ["image_url", "title", "subtitle", "deeplink"]
    package static let literalFields = ["image_type", "title_align", "subtitle_align", "id"]
    package static let requiredFields = ["image_url", "title"]

    /// A story shows at least two pages (one is a rich push).
    package static let minPages = 2
    /// The category Braze's Push Story extension claims (SDK 3.13+; `ab_cat_push_story` before): the default of a
    /// story's `category`.
    package static let category = "ab_cat_push_story_v2"
    /// The images the extension can show.
    package static let imageTypes: Set<String> = ["jpg", "jpeg", "png", "gif"]
    package static let alignments: Set<String> = ["left", "center", "right"]

    /// The name of a page's field among the variant's: `story.2.title`.
    package static func field(_ page: Int, _ name: String) -> String { "story.\(page).\(name)" }

    /// `story.<n>.<field>` → (n, field), else nil.
    package static func parse(_ name: String) -> (page: Int, field: String)? {
        let parts = name.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, parts[0] == "story", let page = Int(parts[1]), page >= 1 else { return nil }
        return (page, String(parts[2]))
    }

    /// Whether a variant's (or a send's) fields hold a story.
    package static func isStory<Value>(_ fields: [String: Value]) -> Bool { fields.keys.contains { $0.hasPrefix("story.") } }

    /// What is wrong with a literal field's value, or nil.
    package static func literalProblem(_ name: String, _ value: String) -> String? {
        switch name {
        case "image_type":
            imageTypes.contains(value) ? nil : "expected one of \(imageTypes.sorted().joined(separator: ", ")), found \"\(value)\""
        case "title_align", "subtitle_align":
            alignments.contains(value) ? nil : "expected left, center or right, found \"\(value)\""
        case "id":
            Rules.isActionName(value) ? nil : "a page id is 1 to 64 letters, digits, `_`, `-` or `.`, found \"\(value)\""
        default: nil
        }
    }

    /// A rendered page, as the extension reads it.
    package struct Page: Sendable, Equatable {
        package var imageURL: String
        package var imageType: String
        package var title: String
        package var titleAlign: String
        package var subtitle: String
        package var subtitleAlign: String
        package var deeplink: String
        package var id: String

        /// Braze's page layout: `i` image, `i_t` its type, `t` title, `t_j` its justification, `st` subtitle, `st_j`,
        /// `uri` the link a tap opens (empty: the app), `id` the page's id (reported back with a tap). Every key, always.
        package var json: JSONValue {
            .object([
                JSONMember("i", .string(imageURL)), JSONMember("i_t", .string(imageType)), JSONMember("t", .string(title)),
                JSONMember("t_j", .string(titleAlign)), JSONMember("st", .string(subtitle)), JSONMember("st_j", .string(subtitleAlign)),
                JSONMember("uri", .string(deeplink)), JSONMember("id", .string(id)),
            ])
        }
    }

    /// The pages of rendered fields, in order; empty when they hold no story. A page's missing type is its image URL's
    /// extension (`check` refused a page without either).
    package static func pages(_ content: [String: String]) -> [Page] {
        var numbers: Set<Int> = []
        for name in content.keys { if let (page, _) = parse(name) { numbers.insert(page) } }
        return numbers.sorted().map { number in
            let value = { (name: String) in content[field(number, name)] ?? "" }
            let image = value("image_url")
            return Page(
                imageURL: image, imageType: content[field(number, "image_type")] ?? imageType(url: image) ?? "",
                title: value("title"), titleAlign: content[field(number, "title_align")] ?? "center",
                subtitle: value("subtitle"), subtitleAlign: content[field(number, "subtitle_align")] ?? "center",
                deeplink: value("deeplink"), id: content[field(number, "id")] ?? "page-\(number)")
        }
    }

    /// An image's type from its URL's path (`…/look.JPG?w=600` → `jpg`), when it is one the extension shows.
    package static func imageType(url: String) -> String? {
        PushOptions.attachmentType(url: url, declared: nil).flatMap { imageTypes.contains($0) ? $0 : nil }
    }

    /// Why a rendered field of a page cannot be sent, or nil: an image that is not an HTTPS URL (Braze: an `http://`
    /// image crashes the extension), an empty title or image, a link an app must not open.
    package static func refusal(field name: String, _ value: String) -> String? {
        guard let (_, field) = parse(name) else { return nil }
        switch field {
        case "image_url":
            if value.isEmpty { return "empty: every page shows an image" }
            return httpsProblem(value)
        case "title":
            return value.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty ? "empty: every page has a title" : nil
        case "deeplink":
            if value.isEmpty { return nil }
            return !Rules.isSafeURL(value)
                ? "expected a URL with a scheme and a host, such as demo://looks/1 (never \(Rules.unsafeSchemes.sorted().joined(separator: ", ")))"
                : nil
        default:
            return nil
        }
    }

    /// Why `url` is not an image URL the extension loads, or nil.
    package static func httpsProblem(_ url: String) -> String? {
        guard url.lowercased().hasPrefix("https://"), (try? Rules.url(url)) != nil else {
            return "expected an https:// URL, found \"\(url.prefix(80))\" (an image over http crashes the story extension)"
        }
        return nil
    }

    /// Why rendered story fields cannot be sent as a whole, or nil: fewer than two pages, a page without a known
    /// image type, or a field refused (`refusal`). Named as the field (`story.2.image_url`).
    package static func problem(_ content: [String: String]) -> (field: String, reason: String)? {
        for (name, value) in content.sorted(by: { $0.key < $1.key }) {
            if let reason = refusal(field: name, value) { return (name, reason) }
        }
        let pages = self.pages(content)
        if pages.count < minPages { return ("story", "\(pages.count) page(s), a story has at least \(minPages)") }
        for (index, page) in pages.enumerated() where page.imageType.isEmpty {
            return (
                field(index + 1, "image_url"),
                "no image type: the URL's path ends in none of \(imageTypes.sorted().joined(separator: ", ")); set `image_type`"
            )
        }
        return nil
    }
}

extension HeraldConfiguration {
    /// The page ids of every story a campaign's push templates tell (any variant, language or experiment arm): the
    /// pages an app's tap may name.
    package func storyPageIDs(project: String, campaign: String) -> Set<String> {
        guard let definition = campaigns["\(project)/\(campaign)"] else { return [] }
        var ids: Set<String> = []
        for message in definition.messages where message.channel == .push {
            for id in [message.template] + message.variantTemplates.values {
                for fields in templates["\(project)/\(id)"]?.variants.values ?? [:].values {
                    for (name, text) in fields where PushStory.parse(name)?.field == "id" { ids.insert(text.source) }
                }
            }
        }
        return ids
    }
}
