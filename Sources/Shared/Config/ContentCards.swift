import Foundation

/// A content card (`kind: content_card`, docs/in-app.md): a card a campaign delivers into each recipient's feed
/// (`cards:` of a campaign, any trigger), which the app reads with a cursor sync (braze-rules §7, rule 25). Its texts
/// are rendered when the campaign delivers it, like a push's; an edit of the card updates the cards already
/// delivered, under the same ids.
package struct ContentCardDefinition: Sendable, LanguageVariants {
    /// Braze's card types, with the fields each shows.
    package enum Kind: String, Sendable, CaseIterable {
        case classic
        case captionedImage = "captioned_image"
        case banner
        case textAnnouncement = "text_announcement"

        /// The variant fields the type must have, then those it may have.
        package var fields: (required: [String], optional: [String]) {
            switch self {
            case .classic: (["title", "description"], ["image_url", "url"])
            case .captionedImage: (["title", "description", "image_url"], ["url"])
            case .banner: (["image_url"], ["url"])
            case .textAnnouncement: (["description"], ["title", "url"])
            }
        }
    }

    /// Braze's categories (`NoCategory` is a card without any).
    package static let categories = ["news", "advertising", "announcements", "social"]

    /// How much one card may hold, as the app receives it (Braze: 2 KB after templating).
    package static let maxBytes = 2048
    /// How long a card lives after its delivery by default (Braze's 30 days), and at most.
    package static let defaultLifetime: TimeInterval = 30 * 86_400
    package static let maxLifetime: TimeInterval = 365 * 86_400
    /// How many live cards one profile holds by default (neither dismissed nor expired).
    package static let defaultMaxPerProfile = 250

    package var id: String
    package var project: String
    package var name: String
    package var kind: Kind
    package var categories: [String]
    /// Shown above the others.
    package var pinned: Bool
    /// Whether the user may dismiss it (a dismissal on one device removes it from all).
    package var dismissible: Bool
    /// The card expires this long after its delivery, or at `expiresAt`, whichever is given.
    package var lifetime: TimeInterval
    package var expiresAt: Date?
    /// Whether the app opens `url` in its own web view.
    package var openInWebView: Bool
    package var extras: [(key: String, value: String)]
    /// What the app runs when the card is clicked (a Batch action or its own, `AppAction`), besides opening `url`.
    package var action: AppAction? = nil
    /// Language (ISO 639-1, or `default`) → field (`title`, `description`, `image_url`, `url`) → text.
    package var variants: [String: [String: TemplateText]]
    package var origin: ConfigOrigin

    package var key: String { "\(project)/\(id)" }

    /// When a card delivered at `time` expires.
    package func expiry(deliveredAt time: Date) -> Date {
        let after = time.addingTimeInterval(lifetime)
        return expiresAt.map { min($0, time.addingTimeInterval(Self.maxLifetime)) } ?? after
    }

    /// Every text with where it is, in a fixed order.
    package var texts: [(field: String, text: TemplateText)] { variantTexts }

    /// What the delivered cards show of the definition, as one text: an edit that changes it updates them (the
    /// expiry and the name are not part of it: a delivered card keeps its expiry).
    package var content: String {
        var members: [JSONMember] = [
            JSONMember("type", .string(kind.rawValue)), JSONMember("categories", .array(categories.map(JSONValue.string))),
            JSONMember("pinned", .bool(pinned)), JSONMember("dismissible", .bool(dismissible)),
            JSONMember("open_in_web_view", .bool(openInWebView)),
            JSONMember("extras", .object(extras.map { JSONMember($0.key, .string($0.value)) })),
        ]
        members.append(JSONMember("variants", .object(variants.sorted { $0.key < $1.key }.map { language, fields in
            JSONMember(language, .object(fields.sorted { $0.key < $1.key }.map { JSONMember($0.key, .string($0.value.source)) }))
        })))
        return JSONValue.object(members).serializedText
    }

    /// A digest of a text (FNV-1a, 64 bits, as 16 hex digits): what tells an edit of a card's `content` apart, stable
    /// across processes (Swift's `Hasher` is seeded per process), not a security digest.
    package static func digest(_ text: String) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in text.utf8 {
            hash ^= UInt64(byte)
            hash = hash &* 0x0000_0100_0000_01b3
        }
        let hex = String(hash, radix: 16)
        return String(repeating: "0", count: 16 - hex.count) + hex
    }

    /// The size, in bytes, of the card as the app receives it with these texts (ids and times are of fixed width).
    package func size(language: String, texts: [String: String]) -> Int {
        let time = Date(timeIntervalSince1970: 0)
        return card(
            id: String(repeating: "0", count: 32), language: language, texts: texts, createdAt: time, updatedAt: time,
            expiresAt: time, viewed: false, clicked: false
        ).serialized.count
    }

    /// The card as the app receives it, from its rendered texts: `id`, times and state are the delivery's.
    package func card(
        id: String, language: String, texts: [String: String], createdAt: Date, updatedAt: Date, expiresAt: Date,
        viewed: Bool, clicked: Bool
    ) -> JSONValue {
        var members: [JSONMember] = [JSONMember("id", .string(id)), JSONMember("type", .string(kind.rawValue))]
        for name in ["title", "description", "image_url", "url"] {
            if let text = texts[name] { members.append(JSONMember(name, .string(text))) }
        }
        if let url = texts["url"], let host = URLComponents(string: url)?.host { members.append(JSONMember("domain", .string(host))) }
        if let action { members.append(JSONMember("action", action.json)) }
        members += [
            JSONMember("open_in_web_view", .bool(openInWebView)),
            JSONMember("categories", .array(categories.map(JSONValue.string))), JSONMember("pinned", .bool(pinned)),
            JSONMember("dismissible", .bool(dismissible)),
            JSONMember("extras", .object(extras.map { JSONMember($0.key, .string($0.value)) })),
            JSONMember("language", .string(language)),
            JSONMember("created_at", .time(createdAt)),
            JSONMember("updated_at", .time(updatedAt)),
            JSONMember("expires_at", .time(expiresAt)),
            JSONMember("viewed", .bool(viewed)), JSONMember("clicked", .bool(clicked)),
        ]
        return .object(members)
    }
}
