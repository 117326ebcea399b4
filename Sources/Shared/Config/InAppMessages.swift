import Foundation

/// An in-app message campaign (`kind: in_app_message`, docs/in-app.md): a message the app shows inside itself when
/// one of its triggers fires on the device (braze-rules §6, rules 22–24). The server says which messages a profile is
/// eligible for now (audience, start and end, re-eligibility, the project's in-app cap, counted per profile across its
/// devices), with their triggers and their content rendered for the profile; the app evaluates the triggers.
package struct InAppMessageDefinition: Sendable, LanguageVariants {
    package enum Kind: String, Sendable, CaseIterable {
        case slideup, modal, full, html

        /// How many buttons the type shows (Braze: up to two on modal and full; a slideup and HTML have none of ours).
        package var maxButtons: Int {
            switch self {
            case .modal, .full: 2
            case .slideup, .html: 0
            }
        }
    }

    /// What a click does: open a URI (a deep link or a web page), open the content cards feed, or only dismiss.
    package enum ClickAction: Sendable, Equatable {
        case uri(String)
        case feed
        case dismiss

        package var json: JSONValue {
            switch self {
            case .uri(let uri): .object([JSONMember("type", .string("uri")), JSONMember("uri", .string(uri))])
            case .feed: .object([JSONMember("type", .string("feed"))])
            case .dismiss: .object([JSONMember("type", .string("dismiss"))])
            }
        }
    }

    /// A trigger the device evaluates, with an optional display delay. A condition reads the trigger's `event.*`.
    package struct Trigger: Sendable {
        package enum Kind: Sendable, Equatable {
            case sessionStart
            /// A custom event by name (as stored: uppercase).
            case event(String)
            /// A purchase: any product (nil), or one product id.
            case purchase(String?)
            /// A notification opened: of any campaign (nil), or of one campaign.
            case pushOpen(String?)
        }

        package var kind: Kind
        /// The condition's text, as written (the device evaluates it; `herald config validate` parsed it).
        package var conditionText: String?
        package var condition: SegmentExpression?
        /// How long after the trigger the message shows.
        package var delay: TimeInterval?

        package var json: JSONValue {
            var members: [JSONMember]
            switch kind {
            case .sessionStart: members = [JSONMember("type", .string("session_start"))]
            case .event(let name): members = [JSONMember("type", .string("event")), JSONMember("event", .string(name))]
            case .purchase(let product):
                members = [JSONMember("type", .string("purchase"))]
                if let product { members.append(JSONMember("product_id", .string(product))) }
            case .pushOpen(let campaign):
                members = [JSONMember("type", .string("push_open"))]
                if let campaign { members.append(JSONMember("campaign", .string(campaign))) }
            }
            if let conditionText { members.append(JSONMember("where", .string(conditionText))) }
            if let delay { members.append(JSONMember("delay_seconds", .number(JSONValue.literal(delay)))) }
            return .object(members)
        }
    }

    /// A button: its id (reported back with a click), and what it does. Its text is the variant's `button.<id>`.
    package struct Button: Sendable {
        package var id: String
        package var action: ClickAction
    }

    package var id: String
    package var project: String
    package var name: String
    package var enabled: Bool
    package var kind: Kind
    /// Higher first: of the messages one trigger fires, the device shows the highest (braze-rules 22).
    package var priority: Int
    package var triggers: [Trigger]
    /// The least time between two in-app messages shown on the device (default 30 s, Braze's).
    package var minTriggerInterval: TimeInterval
    package var audience: String?
    package var reeligibility: CampaignDefinition.Reeligibility
    package var start: Date?
    package var end: Date?
    package var orientation: String
    /// nil: the user dismisses it; else it goes after this long.
    package var autoDismiss: TimeInterval?
    /// What a click on the body does (only without buttons: with buttons, only they act).
    package var clickAction: ClickAction
    package var buttons: [Button]
    /// HTML messages: the asset bundle the web view loads.
    package var assetURL: String?
    package var extras: [(key: String, value: String)]
    /// Language (ISO 639-1, or `default`) → field (`header`, `message`, `image_url`, `button.<id>`) → text.
    package var variants: [String: [String: TemplateText]]
    package var origin: ConfigOrigin

    package var key: String { "\(project)/\(id)" }

    package static let defaultPriority = 50
    package static let defaultMinTriggerInterval: TimeInterval = 30

    /// The variant's fields a message may have.
    package static func isField(_ name: String) -> Bool {
        ["header", "message", "image_url"].contains(name) || name.hasPrefix("button.")
    }

    /// Whether the message may show at `now` (enabled, started, not ended).
    package func isLive(at now: Date) -> Bool {
        enabled && (start.map { $0 <= now } ?? true) && (end.map { now < $0 } ?? true)
    }

    /// Every text with where it is, in a fixed order.
    package var texts: [(field: String, text: TemplateText)] { variantTexts }
}
