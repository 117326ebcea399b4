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
        let candidates = config.inAppMessages.values.filter { $0.project == project }
            .sorted { ($0.priority, $1.id) > ($1.priority, $0.id) }
        // Read once for every message the profile may see.
        let values = ProfileValues(db: db, key: key, defaultTimeZone: config.defaultTimeZone(project: project))
        for message in candidates {
            // The next start or end changes the answer by itself.
            for edge in [message.start, message.end].compactMap({ $0 }) where edge > now && edge < validUntil { validUntil = edge }
            guard !opted, message.isLive(at: now), try eligible(message, key: key) else { continue }
            do {
                messages.append(try render(message, values: values))
            } catch {
                Counter(label: "herald_in_app_render_failed_total", dimensions: [("message", message.key)]).increment()
                Logger(label: "herald.in-app").warning(
                    "in-app message not rendered", metadata: ["message": "\(message.key)", "profile": "\(key)", "error": "\(error)"])
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

    /// Audience and re-eligibility, counted over the profile's impressions on every device.
    func eligible(_ message: InAppMessageDefinition, key: String) throws -> Bool {
        if let audience = message.audience,
            try !SegmentMembersTable(db).contains(segment: "\(message.project)/\(audience)", key: key)
        {
            return false
        }
        let impressions = InAppImpressionsTable(db)
        switch message.reeligibility {
        case .always: return true
        case .once: return try impressions.count(key, message: message.key) == 0
        case .limit(let count, let period):
            let since = WireTime.format(now.addingTimeInterval(-period))
            return try impressions.count(key, message: message.key, since: since) < count
        }
    }

    /// The message as the app shows it, its texts in the profile's language.
    func render(_ message: InAppMessageDefinition, values: ProfileValues) throws -> JSONValue {
        let fallback = config.defaultLanguage(project: message.project)
        guard let variant = message.variant(language: values.language, fallback: fallback) else {
            throw TemplateError("no variant for \(values.language ?? "no language"), default or \(fallback)")
        }
        let texts = variant.fields.values.map(\.liquid)
        let paths = MessageRenderer.variablePaths(texts, blocks: [:])
        let trigger = TriggerContext(type: "in_app", occurrence: "in_app", at: now)
        let variables = MessageContext(values: values, context: trigger, campaign: nil, step: "in_app").variables(for: paths)
        let options = MessageRenderer.options(timeZone: values.timeZone, now: now)
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
