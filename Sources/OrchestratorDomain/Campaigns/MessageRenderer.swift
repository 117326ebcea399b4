import Crypto
import Foundation
import GRDB
import PartitionStore
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

    /// The send request of one message, whole: every placeholder has a value or a default, or nothing is sent.
    func render(
        _ campaign: CampaignDefinition, message: CampaignDefinition.Message, step: String, values: ProfileValues,
        _ context: TriggerContext
    ) throws -> SendRequest {
        guard let template = rules.config.templates["\(campaign.project)/\(message.template)"] else {
            throw TemplateError(offset: 0, message: "no template \(message.template)")
        }
        let fallback = rules.config.defaultLanguage(project: campaign.project)
        guard let variant = template.variant(language: values.language, fallback: fallback) else {
            throw TemplateError(offset: 0, message: "template \(template.id) has no variant for \(values.language ?? "no language"), default or \(fallback)")
        }
        let read = { (path: String) -> String? in
            let names = path.split(separator: ".", maxSplits: 1).map(String.init)
            if names[0] == "event" || names[0] == "trigger" { return context.value(names[0], names[1])?.text }
            return values.text(path)
        }
        var content: [String: String] = [:]
        for (name, text) in variant.fields {
            let field = "\(template.id).\(variant.language).\(name)"
            let escape: ((String) -> String)? = message.channel == .email && name == "html" ? { TemplateText.escapeHTML($0) } : nil
            let rendered: String
            do {
                rendered = try text.render(read, escape: escape)
            } catch {
                throw TemplateError(offset: 0, message: "\(field): \(error.message)")
            }
            // A line break in a header field would start another header (a `Bcc:` added by a profile value).
            if Self.headerFields[message.channel]?.contains(name) == true, rendered.contains(where: \.isNewline) {
                throw TemplateError(offset: 0, message: "\(field): a line break in a header field")
            }
            content[name] = rendered
        }
        var payload: [String: JSONValue]?
        if !template.payload.isEmpty {
            payload = [:]
            for (name, value) in template.payload {
                switch value {
                case .json(let json): payload?[name] = json
                case .text(let text):
                    do {
                        payload?[name] = .string(try text.render(read))
                    } catch {
                        throw TemplateError(offset: 0, message: "\(template.id).payload.\(name): \(error.message)")
                    }
                }
            }
        }
        let expiresAt = campaign.expiresAfter.map { context.at.addingTimeInterval($0) }
        var send = SendRequest(
            sendID: Self.sendID(campaign: campaign.key, step: step, profileKey: values.key, occurrence: context.occurrence),
            project: campaign.project, profileKey: values.key, customID: values.profile?["custom_id"],
            channel: message.channel, marketing: campaign.marketing, app: message.app, campaign: campaign.id, step: step,
            occurrence: context.occurrence, template: template.id, language: variant.language, content: content,
            payload: payload,
            trigger: SendRequest.Trigger(type: context.type, eventName: context.eventName, eventID: context.eventID, at: context.at),
            decidedAt: now, expiresAt: expiresAt)
        send.requestID = context.requestID
        send.contactRevision = values.profile?["contact_revision"]
        send.dueAt = campaign.delay.map { context.at.addingTimeInterval($0) }
        // The category's buttons, for each app this push may reach whose configuration defines them.
        if message.channel == .push {
            send.actions = rules.config.pushActions(project: campaign.project, app: message.app, category: content["category"])
        }
        if context.at > now {
            // Decided ahead of its time (a local-time release): leaves at it.
            send.notBefore = context.at
            send.dueAt = context.at
        }
        return send
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
