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
        /// `{"profile": …, "messages": [ … ], "valid_until": …}`; nil when the app's tag is this answer's: nothing
        /// changed since the app's last answer, and nothing was rendered.
        package var json: JSONValue?
        /// The digest of what the answer is computed from (`InAppAnswerTag`): the same inputs give the same tag.
        package var etag: String
        /// Until when the tag holds while the profile's rows and the configuration stay as they are: the first instant
        /// at which time alone may change the answer (a start or end, or its coming within `maxValidity`; an impression
        /// leaving a re-eligibility window). nil when it changes with the clock (a text reads it).
        package var holdsUntil: Date?

        /// The answer to a revalidation whose tag is current (no body).
        package static func unchanged(_ etag: String) -> Answer { Answer(json: nil, etag: etag, holdsUntil: nil) }
    }

    /// The answer for the installation under the profile `key`; nil when the profile does not hold the installation
    /// (an identify or a logout not applied yet, or another user's installation): no message computed for another
    /// profile is ever returned. When `revalidates` accepts the answer's tag (the app's `If-None-Match`), the answer
    /// has no body and no message is rendered.
    package func answer(key: String, installationID: String, revalidates: (String) -> Bool = { _ in false }) throws -> Answer? {
        guard let opted = try InstallationHolder.optedOut(db, key: key, installationID: installationID) else { return nil }
        let project = ProfileKey.project(of: key)
        var validUntil = now.addingTimeInterval(Self.maxValidity)
        let candidates = config.inAppMessagesByPriority[project] ?? []
        // Read once for every message the profile may see: its values, segments and impressions.
        let values = ProfileValues(db: db, key: key, defaultTimeZone: config.defaultTimeZone(project: project))
        let profile = try ProfileState(db: db, key: key)
        var shown: [InAppMessageDefinition] = []
        for message in candidates {
            // The next start or end changes the answer by itself.
            if let start = message.start, start > now, start < validUntil { validUntil = start }
            if let end = message.end, end > now, end < validUntil { validUntil = end }
            guard !opted, message.isLive(at: now), eligible(message, profile) else { continue }
            shown.append(message)
        }
        // The profile's language, time zone and variables, once for every message shown.
        let language = values.language
        let fallback = config.defaultLanguage(project: project)
        let timeZone = values.timeZone
        let paths = variablePaths(of: shown, language: language, fallback: fallback)
        let trigger = TriggerContext(type: .inApp, occurrence: "in_app", at: now)
        let variables = MessageContext(values: values, context: trigger, campaign: nil, step: "in_app").variables(for: paths)
        let custom = ProfileKey.customID(of: key, project: project)
        var tag = InAppAnswerTag()
        tag.add(custom)
        tag.add(installationID)
        tag.add(language)
        tag.add(fallback)
        tag.add(timeZone.identifier)
        tag.add(UInt64(shown.count))
        for message in shown {
            tag.add(message.key)
            tag.add(message.version)
        }
        tag.add(variables, at: paths)
        if shown.contains(where: \.readsClock) { tag.add(now.timeIntervalSince1970.bitPattern) }
        // A start or end within the answer's validity shortens it: the app's last answer, with its longer `valid_until`,
        // is not current then.
        if validUntil < now.addingTimeInterval(Self.maxValidity) { tag.add(validUntil.timeIntervalSince1970.bitPattern) }
        let etag = tag.value
        let holdsUntil = shown.contains(where: \.readsClock) ? nil : timeHolds(candidates, profile)
        if revalidates(etag) { return Answer(json: nil, etag: etag, holdsUntil: holdsUntil) }

        let rendering = Rendering(
            language: language, options: MessageRenderer.options(timeZone: timeZone, now: now), variables: variables)
        var messages: [JSONValue] = []
        for message in shown {
            do {
                messages.append(try render(message, rendering, fallback: fallback))
            } catch {
                Counter(label: "herald_in_app_render_failed_total", dimensions: [("message", message.key)]).increment()
                RenderWarnings.warn(
                    Logger(label: "herald.in-app"), key: message.key, "in-app message not rendered",
                    metadata: ["message": "\(message.key)", "profile": "\(key)", "error": "\(error)"])
            }
        }
        return Answer(
            json: .object([
                JSONMember("profile", .object([
                    JSONMember("custom_id", custom.map(JSONValue.string) ?? .null), JSONMember("installation_id", .string(installationID)),
                ])),
                JSONMember("messages", .array(messages)), JSONMember("valid_until", .time(validUntil)),
            ]),
            etag: etag, holdsUntil: holdsUntil)
    }

    /// The first instant after `now` at which time alone may change the answer's tag: a message's start or end comes
    /// within `maxValidity` (the answer's `valid_until` shortens) or passes, or an impression leaves a re-eligibility
    /// window (a message capped now may be shown again).
    func timeHolds(_ candidates: [InAppMessageDefinition], _ profile: ProfileState) -> Date {
        var holds = Date.distantFuture
        for message in candidates {
            for edge in [message.start, message.end].compactMap({ $0 }) where edge > now {
                let nearing = edge.addingTimeInterval(-Self.maxValidity)
                holds = min(holds, nearing > now ? nearing : edge)
            }
            guard case .limit(_, let period) = message.reeligibility, let shown = profile.impressions[message.key] else { continue }
            for at in shown {
                // An impression counts while it is at or after `now - period`, compared to the millisecond: the tag
                // holds until a second before it leaves (not at all within that second).
                if at.addingTimeInterval(period) > now { holds = min(holds, at.addingTimeInterval(period - 1)) }
            }
        }
        return holds
    }

    /// What eligibility reads of the profile, read once per sync: its segments, and its impressions on every device.
    struct ProfileState {
        var segments: Set<String>
        /// Message key → the times it was shown.
        var impressions: [String: [Date]]

        init(db: Database, key: String) throws {
            segments = Set(try SegmentMembersTable(db).segments(of: key))
            impressions = Dictionary(grouping: try InAppImpressionsTable(db).all(key), by: \.message).mapValues { $0.map(\.at) }
        }
    }

    /// Audience and re-eligibility, counted over the profile's impressions on every device.
    func eligible(_ message: InAppMessageDefinition, _ profile: ProfileState) -> Bool {
        if let audience = message.audienceKey, !profile.segments.contains(audience) { return false }
        guard let shown = profile.impressions[message.key], !shown.isEmpty else { return true }
        switch message.reeligibility {
        case .always: return true
        case .once: return false
        case .limit(let count, let period):
            // Compared to the millisecond, as stored.
            let since = WireTime.rounded(now.addingTimeInterval(-period))
            return shown.count(where: { $0 >= since }) < count
        }
    }

    /// How a sync renders its messages: the profile's language, its render options (time zone, now) and variables.
    struct Rendering {
        var language: String?
        var options: LiquidRenderOptions
        var variables: LiquidObject
    }

    /// The variables every text of `messages` reads in the profile's language (`LiquidTemplate.variablePaths`).
    func variablePaths(of messages: [InAppMessageDefinition], language: String?, fallback: String) -> Set<[String]> {
        var paths: Set<[String]> = []
        for message in messages {
            if let variant = message.variant(language: language, fallback: fallback), let read = message.variablePaths[variant.language] {
                paths.formUnion(read)
            }
        }
        return paths
    }

    /// The message as the app shows it, its texts in the profile's language.
    func render(_ message: InAppMessageDefinition, _ rendering: Rendering, fallback: String) throws -> JSONValue {
        guard let variant = message.variant(language: rendering.language, fallback: fallback) else {
            throw TemplateError("no variant for \(rendering.language ?? "no language"), default or \(fallback)")
        }
        let (options, variables) = (rendering.options, rendering.variables)
        let rendered = try FieldRendering.render(
            variant.fields, prefix: "\(message.id).\(variant.language)", variables: variables, options: { _ in options },
            // A profile value rendered into the image's URL is still one an app may load (never `javascript:`).
            check: { name, url in
                name == "image_url" && !url.isEmpty && !Rules.isSafeURL(url)
                    ? "not a URL an app may load once rendered" : nil
            })
        return message.answerJSON(language: variant.language, texts: rendered)
    }
}
