import Crypto
import Foundation
import GRDB
import PartitionStore
import Liquid
import Logging
import Shared

/// A campaign message rendered for one profile: the send request, or a dead letter saying why it could not be.
struct MessageRenderer {
    let rules: EngagementRules
    let now: Date

    /// 32 hex characters of SHA-256 over campaign, step, profile and occurrence (`SendIDDerivation.campaign`).
    static func sendID(campaign: String, step: String, profileKey: String, occurrence: String) -> String {
        SendIDDerivation.campaign(campaign: campaign, step: step, profileKey: profileKey, occurrence: occurrence)
    }

    /// The most one rendered field may hold, and the most work its template may do (a loop over a huge array must
    /// not stall the partition): past either, the message fails whole.
    static let maxFieldBytes = 256 << 10
    static let maxSteps = 100_000

    /// How a message's texts render: strict (a missing value fails the message unless a default follows), bounded.
    static func options(timeZone: TimeZone, now: Date) -> LiquidRenderOptions {
        var options = LiquidRenderOptions()
        options.strictVariables = true
        options.timeZone = timeZone
        options.now = now
        options.maxOutputBytes = maxFieldBytes
        options.maxSteps = maxSteps
        return options
    }

    /// The send request of one message, whole: every variable has a value or a default, or nothing is sent.
    func render(
        _ campaign: CampaignDefinition, message: CampaignDefinition.Message, step: String, values: ProfileValues,
        _ context: TriggerContext
    ) throws -> SendRequest {
        guard let template = rules.config.templates["\(campaign.project)/\(message.template)"] else {
            throw TemplateError("no template \(message.template)")
        }
        let fallback = rules.config.defaultLanguage(project: campaign.project)
        guard let variant = template.variant(language: values.language, fallback: fallback) else {
            throw TemplateError("template \(template.id) has no variant for \(values.language ?? "no language"), default or \(fallback)")
        }
        let payloadTexts = template.payload.values.compactMap { if case .text(let text) = $0 { text } else { nil } }
        let (variables, options) = Self.environment(
            Array(variant.fields.values) + payloadTexts, config: rules.config, project: campaign.project,
            MessageContext(values: values, context: context, campaign: campaign, step: step), now: now)
        let headers = Self.headerFields[message.channel] ?? []
        var content = try FieldRendering.render(
            variant.fields, prefix: "\(template.id).\(variant.language)", variables: variables,
            options: { name in
                var fieldOptions = options
                if message.channel == .email && name == "html" { fieldOptions.escape = { LiquidFilters.escapeHTML($0) } }
                return fieldOptions
            },
            // A line break in a header field would start another header (a `Bcc:` added by a profile value).
            check: { name, rendered in
                headers.contains(name) && rendered.contains(where: \.isNewline) ? "a line break in a header field" : nil
            })
        var payload: [String: JSONValue]?
        if !template.payload.isEmpty {
            var texts: [String: TemplateText] = [:]
            payload = [:]
            for (name, value) in template.payload {
                switch value {
                case .json(let json): payload?[name] = json
                case .text(let text): texts[name] = text
                }
            }
            let rendered = try FieldRendering.render(texts, prefix: "\(template.id).payload", variables: variables, options: { _ in options })
            for (name, text) in rendered { payload?[name] = .string(text) }
        }
        var endpoint: WebhookEndpointDefinition?
        if message.channel == .webhook {
            let id = message.endpoint ?? ""
            guard let found = rules.config.webhookEndpoints["\(campaign.project)/\(id)"] else {
                throw TemplateError("no webhook endpoint \(id) in project \(campaign.project)")
            }
            content = try WebhookRequests.request(content, endpoint: found, prefix: "\(template.id).\(variant.language)")
            endpoint = found
        }
        if message.channel == .push, PushStory.isStory(content) {
            try Self.checkStory(content, payload: payload, prefix: "\(template.id).\(variant.language)", campaign: campaign.id)
        }
        let expiresAt = campaign.expiresAfter.map { context.at.addingTimeInterval($0) }
        var send = SendRequest(
            sendID: Self.sendID(campaign: campaign.key, step: step, profileKey: values.key, occurrence: context.occurrence),
            project: campaign.project, profileKey: values.key, customID: values.profile?.customID,
            channel: message.channel, marketing: campaign.marketing, app: message.app, campaign: campaign.id, step: step,
            occurrence: context.occurrence, template: template.id, language: variant.language, content: content,
            payload: payload,
            trigger: SendRequest.Trigger(type: context.type, eventName: context.eventName, eventID: context.eventID, at: context.at),
            decidedAt: now, expiresAt: expiresAt)
        send.requestID = context.requestID
        // A webhook calls the customer's endpoint, not the person: it waits for no contact snapshot.
        send.contactRevision = endpoint == nil ? values.profile?.contactRevision : nil
        send.endpoint = endpoint?.id
        send.dueAt = campaign.delay.map { context.at.addingTimeInterval($0) }
        if message.channel == .email, !campaign.tracking { send.tracking = false }
        // The category's buttons, for each app this push may reach whose configuration defines them.
        if message.channel == .push {
            send.actions = rules.config.pushActions(project: campaign.project, app: message.app, category: content["category"])
            send.landing = message.landing
        }
        if context.at > now {
            // Decided ahead of its time (a local-time release): leaves at it.
            send.notBefore = context.at
            send.dueAt = context.at
        }
        return send
    }

    /// A rendered Push Story is sent whole or not at all: every page complete, and the whole within a push's bytes
    /// (with room for Herald's key: the send id, the campaign and the source).
    static func checkStory(_ content: [String: String], payload: [String: JSONValue]?, prefix: String, campaign: String) throws(TemplateError) {
        if let (field, reason) = PushStory.problem(content) { throw TemplateError("\(prefix).\(field): \(reason)") }
        let herald = #","com.herald":{"i":"","c":"","t":"tc"}"#.utf8.count + 32 + campaign.utf8.count
        if let (field, reason) = PushStoryPayload.sizeProblem(content, payload: payload, herald: herald) {
            throw TemplateError("\(prefix).\(field): \(reason)")
        }
    }

    /// What `texts` render with for one profile and trigger: the variables they read (with the content blocks they
    /// include, the project's blocks only when one does), and the strict, bounded options in the profile's time zone.
    static func environment(
        _ texts: [TemplateText], config: HeraldConfiguration, project: String, _ context: MessageContext, now: Date
    ) -> (LiquidObject, LiquidRenderOptions) {
        let templates = texts.map(\.liquid)
        let blocks = templates.contains { !$0.contentBlocks.isEmpty } ? config.contentBlocks(project: project) : [:]
        var options = options(timeZone: context.values.timeZone, now: now)
        options.contentBlocks = blocks
        return (context.variables(for: variablePaths(templates, blocks: blocks)), options)
    }

    /// What `templates` read, with the content blocks they include (and those include, each once).
    static func variablePaths(_ templates: [LiquidTemplate], blocks: [String: LiquidTemplate]) -> Set<[String]> {
        var paths: Set<[String]> = []
        var seen: Set<String> = []
        var pending = templates
        while let template = pending.popLast() {
            paths.formUnion(template.variablePaths)
            for name in template.contentBlocks where seen.insert(name).inserted {
                if let block = blocks[name] { pending.append(block) }
            }
        }
        return paths
    }

    /// Fields that become message or request headers: an email's, and a push's `apns-collapse-id`.
    static let headerFields: [MessageChannel: Set<String>] = [.email: ["subject", "from", "reply_to"], .push: ["collapse_id"]]

    func failure(_ campaign: CampaignDefinition, step: String, key: String, occurrence: String, reason: String) -> PendingOutput {
        Logger(label: "herald.campaigns").warning(
            "message not sent: template did not render",
            metadata: [
                "campaign": "\(campaign.key)", "step": "\(step)", "reason": "\(reason)",
                // Not the profile key (a custom ID is personal data): the id the send would have had.
                "send_id": "\(Self.sendID(campaign: campaign.key, step: step, profileKey: key, occurrence: occurrence))",
            ])
        let record = KafkaRecord(
            topic: "campaign:\(campaign.key)", partition: 0, offset: 0, key: Array(key.utf8),
            value: JSONValue.object([
                JSONMember("campaign", .string(campaign.id)), JSONMember("step", .string(step)),
                JSONMember("occurrence", .string(occurrence)),
            ]).serialized)
        return .deadLetter(record, service: "orchestrator", reason: "campaign \(campaign.id) \(step): \(reason)", at: now)
    }
}
