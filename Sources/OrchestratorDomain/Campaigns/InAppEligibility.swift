import Crypto
import Foundation
import GRDB
import Liquid
import Logging
import Metrics
import Shared

/// The in-app messages a profile is eligible for now, for one of its installations (docs/in-app.md, braze-rules
/// 22–24): every live message of the project (enabled, started, not ended) whose audience holds the profile and whose
/// re-eligibility its impressions on all its devices allow, highest priority first, with its triggers for the device
/// to evaluate and its content rendered for the profile. A message that cannot be rendered whole is left out (never
/// half-rendered), and counted.
package struct InAppEligibility {
    let db: Database
    let config: HeraldConfiguration
    let now: Date

    package init(db: Database, config: HeraldConfiguration, now: Date) {
        self.db = db
        self.config = config
        self.now = now
    }

    /// How long an answer holds at most: a stopped campaign, a segment exit or a reached cap shows within this.
    package static let maxValidity: TimeInterval = 5

    package struct Answer: Sendable {
        /// `{"profile": …, "messages": [ … ], "valid_until": …}`.
        package var json: JSONValue
        /// A digest of the messages (the app's `If-None-Match`): the same messages give the same tag.
        package var etag: String
    }

    /// The answer for the installation under the profile `key`; nil when the profile does not hold the installation
    /// (an identify or a logout not applied yet, or another user's installation): no message computed for another
    /// profile is ever returned.
    package func answer(key: String, installationID: String) throws -> Answer? {
        guard let installation = try InstallationHolder.row(db, key: key, installationID: installationID) else { return nil }
        let project = ProfileKey.project(of: key)
        var validUntil = now.addingTimeInterval(Self.maxValidity)
        var messages: [JSONValue] = []
        let opted = installation["opted_out"] as Bool? ?? false
        let candidates = config.inAppMessagesByPriority[project] ?? []
        // Read once for every message the profile may see: its values, segments and impressions.
        let values = ProfileValues(db: db, key: key, defaultTimeZone: config.defaultTimeZone(project: project))
        let profile = try ProfileState(db: db, key: key)
        var shown: [InAppMessageDefinition] = []
        for message in candidates {
            // The next start or end changes the answer by itself.
            for edge in [message.start, message.end].compactMap({ $0 }) where edge > now && edge < validUntil { validUntil = edge }
            guard !opted, message.isLive(at: now), eligible(message, profile) else { continue }
            shown.append(message)
        }
        // The profile's language, time zone and variables, once for every message shown.
        let language = values.language
        let rendering = Rendering(
            language: language, options: MessageRenderer.options(timeZone: values.timeZone, now: now),
            variables: variables(for: shown, values: values, language: language))
        for message in shown {
            do {
                messages.append(try render(message, rendering))
            } catch {
                Counter(label: "herald_in_app_render_failed_total", dimensions: [("message", message.key)]).increment()
                RenderWarnings.warn(
                    Logger(label: "herald.in-app"), key: message.key, "in-app message not rendered",
                    metadata: ["message": "\(message.key)", "profile": "\(key)", "error": "\(error)"])
            }
        }
        let list = JSONValue.array(messages)
        let etag = "\"" + SHA256.hash(data: list.serialized).prefix(12).hexString + "\""
        let custom = ProfileKey.customID(of: key, project: project)
        return Answer(
            json: .object([
                JSONMember("profile", .object([
                    JSONMember("custom_id", custom.map(JSONValue.string) ?? .null), JSONMember("installation_id", .string(installationID)),
                ])),
                JSONMember("messages", list), JSONMember("valid_until", .string(WireTime.format(validUntil))),
            ]),
            etag: etag)
    }

    /// What eligibility reads of the profile, read once per sync: its segments, and its impressions on every device.
    struct ProfileState {
        var segments: Set<String>
        /// Message key → the times it was shown.
        var impressions: [String: [String]]

        init(db: Database, key: String) throws {
            segments = Set(try SegmentMembersTable(db).segments(of: key))
            impressions = Dictionary(grouping: try InAppImpressionsTable(db).all(key), by: \.message).mapValues { $0.map(\.at) }
        }
    }

    /// Audience and re-eligibility, counted over the profile's impressions on every device.
    func eligible(_ message: InAppMessageDefinition, _ profile: ProfileState) -> Bool {
        if let audience = message.audience, !profile.segments.contains("\(message.project)/\(audience)") { return false }
        let shown = profile.impressions[message.key] ?? []
        switch message.reeligibility {
        case .always: return true
        case .once: return shown.isEmpty
        case .limit(let count, let period):
            let since = WireTime.format(now.addingTimeInterval(-period))
            return shown.count(where: { $0 >= since }) < count
        }
    }

    /// How a sync renders its messages: the profile's language, its render options (time zone, now) and variables.
    struct Rendering {
        var language: String?
        var options: LiquidRenderOptions
        var variables: LiquidObject
    }

    /// The variables every text of `messages` reads, in the profile's language, built once for all of them.
    func variables(for messages: [InAppMessageDefinition], values: ProfileValues, language: String?) -> LiquidObject {
        var texts: [LiquidTemplate] = []
        for message in messages {
            let fallback = config.defaultLanguage(project: message.project)
            texts += message.variant(language: language, fallback: fallback)?.fields.values.map(\.liquid) ?? []
        }
        let trigger = TriggerContext(type: "in_app", occurrence: "in_app", at: now)
        return MessageContext(values: values, context: trigger, campaign: nil, step: "in_app")
            .variables(for: MessageRenderer.variablePaths(texts, blocks: [:]))
    }

    /// The message as the app shows it, its texts in the profile's language.
    func render(_ message: InAppMessageDefinition, _ rendering: Rendering) throws -> JSONValue {
        let fallback = config.defaultLanguage(project: message.project)
        guard let variant = message.variant(language: rendering.language, fallback: fallback) else {
            throw TemplateError("no variant for \(rendering.language ?? "no language"), default or \(fallback)")
        }
        let (options, variables) = (rendering.options, rendering.variables)
        var rendered: [String: String] = [:]
        for (name, text) in variant.fields.sorted(by: { $0.key < $1.key }) {
            do {
                rendered[name] = try text.liquid.render(variables, options: options)
            } catch {
                throw TemplateError("\(message.id).\(variant.language).\(name): \(error)")
            }
        }
        var members: [JSONMember] = [
            JSONMember("id", .string(message.id)), JSONMember("type", .string(message.kind.rawValue)),
            JSONMember("priority", .number(String(message.priority))), JSONMember("triggers", .array(message.triggers.map(\.json))),
            JSONMember("min_trigger_interval_seconds", .number(JSONValue.literal(message.minTriggerInterval))),
            JSONMember("language", .string(variant.language)),
        ]
        for name in ["header", "message", "image_url"] {
            if let text = rendered[name] { members.append(JSONMember(name, .string(text))) }
        }
        if !message.buttons.isEmpty {
            members.append(JSONMember("buttons", .array(message.buttons.map { button in
                .object([
                    JSONMember("id", .string(button.id)), JSONMember("text", .string(rendered["button.\(button.id)"] ?? "")),
                    JSONMember("action", button.action.json),
                ])
            })))
        } else {
            members.append(JSONMember("click_action", message.clickAction.json))
        }
        members.append(JSONMember("orientation", .string(message.orientation)))
        members.append(JSONMember("dismiss_after_seconds", message.autoDismiss.map { .number(JSONValue.literal($0)) } ?? .null))
        if let asset = message.assetURL { members.append(JSONMember("asset_url", .string(asset))) }
        members.append(JSONMember("extras", .object(message.extras.map { JSONMember($0.key, .string($0.value)) })))
        if let end = message.end { members.append(JSONMember("ends_at", .string(WireTime.format(end)))) }
        return .object(members)
    }
}
