import Foundation
import Liquid

/// An in-app message campaign (`kind: in_app_message`, docs/in-app.md): a message the app shows inside itself when
/// one of its triggers fires on the device (braze-rules §6, rules 22–24). The server says which messages a profile is
/// eligible for now (audience, start and end, re-eligibility, the project's in-app cap, counted per profile across its
/// devices), with their triggers and their content rendered for the profile; the app evaluates the triggers.
///
/// A class, not a struct: a sync walks every message of the project, and a copy of a definition is a dozen retains.
/// Unchecked `Sendable`: every field is a constant but `version`, written once in `init` before the definition is shared.
package final class InAppMessageDefinition: @unchecked Sendable, LanguageVariants {
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
        /// A Batch action or the app's own (`AppAction`).
        case action(AppAction)

        package var json: JSONValue {
            switch self {
            case .uri(let uri): .object([JSONMember("type", .string("uri")), JSONMember("uri", .string(uri))])
            case .feed: .object([JSONMember("type", .string("feed"))])
            case .dismiss: .object([JSONMember("type", .string("dismiss"))])
            case .action(let action):
                .object([JSONMember("type", .string("action")), JSONMember("id", .string(action.id)), JSONMember("args", action.args)])
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

    package let id: String
    package let project: String
    package let name: String
    package let enabled: Bool
    package let kind: Kind
    /// Higher first: of the messages one trigger fires, the device shows the highest (braze-rules 22).
    package let priority: Int
    package let triggers: [Trigger]
    /// The least time between two in-app messages shown on the device (default 30 s, Braze's).
    package let minTriggerInterval: TimeInterval
    package let audience: String?
    package let reeligibility: CampaignDefinition.Reeligibility
    package let start: Date?
    package let end: Date?
    package let orientation: String
    /// nil: the user dismisses it; else it goes after this long.
    package let autoDismiss: TimeInterval?
    /// What a click on the body does (only without buttons: with buttons, only they act).
    package let clickAction: ClickAction
    package let buttons: [Button]
    /// HTML messages: the asset bundle the web view loads.
    package let assetURL: String?
    package let extras: [(key: String, value: String)]
    /// Language (ISO 639-1, or `default`) → field (`header`, `message`, `image_url`, `button.<id>`) → text.
    package let variants: [String: [String: TemplateText]]
    package let origin: ConfigOrigin
    /// A digest of everything an answer shows of the message (`answerJSON` of every variant, with the templates'
    /// sources for texts): an edit that changes what a sync returns changes it. Part of a sync's tag
    /// (`InAppAnswerTag`), computed once here rather than at every sync.
    package private(set) var version = ""
    /// Whether a render of the message may read the clock (a `date` filter meets `"now"`): its answer's tag then
    /// changes with the time.
    package let readsClock: Bool

    package init(
        id: String, project: String, name: String, enabled: Bool, kind: Kind, priority: Int, triggers: [Trigger],
        minTriggerInterval: TimeInterval, audience: String?, reeligibility: CampaignDefinition.Reeligibility, start: Date?,
        end: Date?, orientation: String, autoDismiss: TimeInterval?, clickAction: ClickAction, buttons: [Button],
        assetURL: String?, extras: [(key: String, value: String)], variants: [String: [String: TemplateText]],
        origin: ConfigOrigin
    ) {
        (self.id, self.project, self.name, self.enabled, self.kind, self.priority) = (id, project, name, enabled, kind, priority)
        (self.triggers, self.minTriggerInterval, self.audience, self.reeligibility) = (triggers, minTriggerInterval, audience, reeligibility)
        (self.start, self.end, self.orientation, self.autoDismiss) = (start, end, orientation, autoDismiss)
        (self.clickAction, self.buttons, self.assetURL, self.extras) = (clickAction, buttons, assetURL, extras)
        (self.variants, self.origin) = (variants, origin)
        key = "\(project)/\(id)"
        audienceKey = audience.map { "\(project)/\($0)" }
        variablePaths = variants.mapValues { fields in fields.values.reduce(into: []) { $0.formUnion($1.liquid.variablePaths) } }
        readsClock = variants.values.contains { $0.values.contains { $0.liquid.readsClock } }
        let content = JSONValue.array(variants.sorted { $0.key < $1.key }.map { language, fields in
            answerJSON(language: language, texts: fields.mapValues(\.source))
        })
        version = ContentCardDefinition.digest(content.serializedText)
    }

    /// `<project>/<id>`, and the audience's segment key: stored, for a sync reads them for every message.
    package let key: String
    package let audienceKey: String?
    /// Each variant's variables its texts read (`LiquidTemplate.variablePaths`), by language.
    package let variablePaths: [String: Set<[String]>]

    /// The message as the app receives it in a sync (docs/in-app.md), with `texts` (field → text) of the variant
    /// `language`: rendered for a profile at a sync; the templates' sources for the message's `version`.
    package func answerJSON(language: String, texts: [String: String]) -> JSONValue {
        var members: [JSONMember] = [
            JSONMember("id", .string(id)), JSONMember("type", .string(kind.rawValue)),
            JSONMember("priority", .number(String(priority))), JSONMember("triggers", .array(triggers.map(\.json))),
            JSONMember("min_trigger_interval_seconds", .number(JSONValue.literal(minTriggerInterval))),
            JSONMember("language", .string(language)),
        ]
        for name in ["header", "message", "image_url"] {
            if let text = texts[name] { members.append(JSONMember(name, .string(text))) }
        }
        if !buttons.isEmpty {
            members.append(JSONMember("buttons", .array(buttons.map { button in
                .object([
                    JSONMember("id", .string(button.id)), JSONMember("text", .string(texts["button.\(button.id)"] ?? "")),
                    JSONMember("action", button.action.json),
                ])
            })))
        } else {
            members.append(JSONMember("click_action", clickAction.json))
        }
        members.append(JSONMember("orientation", .string(orientation)))
        members.append(JSONMember("dismiss_after_seconds", autoDismiss.map { .number(JSONValue.literal($0)) } ?? .null))
        if let assetURL { members.append(JSONMember("asset_url", .string(assetURL))) }
        members.append(JSONMember("extras", .object(extras.map { JSONMember($0.key, .string($0.value)) })))
        if let end { members.append(JSONMember("ends_at", .time(end))) }
        return .object(members)
    }

    package static let defaultPriority = 50
    package static let defaultMinTriggerInterval: TimeInterval = 30
    /// The impressions of a message a profile keeps, the newest (what an app key can store per profile and message;
    /// `reeligibility.max` of an in-app message is at most this).
    package static let keptImpressions = 1_000

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
