import Crypto
import Foundation
import GRDB
import PartitionStore
import Logging
import Metrics
import Shared

/// Events and triggers turned into campaign decisions: delays on timers, re-eligibility, quiet hours
/// (CampaignTiming.swift), frequency caps (FrequencyCaps.swift), send requests in the outbox.
extension Engagement {
    /// An event happened to the profile: it cancels the waiting delays of campaigns that cancel on it, and triggers
    /// the campaigns it starts (when their condition on the event holds).
    mutating func eventHappened(key: String, _ context: TriggerContext) throws {
        let project = ProfileKey.project(of: key)
        guard let name = context.eventName else { return }
        for campaign in rules.cancellers["\(project)/\(name)"] ?? [] {
            try db.executeCached(
                sql: "DELETE FROM timers WHERE profile_key = ? AND kind IN ('delay', 'quiet') AND ref >= ? AND ref < ?",
                arguments: [key, "\(campaign.key) ", "\(campaign.key)!"])
            if db.changesCount > 0 { count(campaign, "cancelled", by: db.changesCount) }
        }
        for campaign in rules.eventCampaigns["\(project)/\(name)"] ?? [] {
            if case .event(_, let condition?) = campaign.trigger {
                let holds = condition.matches(at: now) { path in context.value(path.namespace, path.names.joined(separator: ".")) }
                guard holds else { continue }
            }
            try trigger(campaign, key: key, context)
        }
    }

    /// A trigger fired for the profile: wait the campaign's delay (on a timer), or decide now. One delay per campaign
    /// and profile waits at a time: a trigger while one waits is counted `already_waiting` and dropped (the waiting one
    /// decides; the timers hold one row per campaign and profile, not one per event).
    mutating func trigger(_ campaign: CampaignDefinition, key: String, _ context: TriggerContext) throws {
        if let delay = campaign.delay {
            let waiting = try Bool.fetchOne(
                db.cachedStatement(
                    sql: "SELECT 1 FROM timers WHERE profile_key = ? AND kind = 'delay' AND ref >= ? AND ref < ? AND ref != ? LIMIT 1"),
                arguments: [key, "\(campaign.key) ", "\(campaign.key)!", "\(campaign.key) \(context.occurrence)"]) ?? false
            guard !waiting else {
                count(campaign, "already_waiting")
                return
            }
            try setTimer(
                key: key, kind: "delay", ref: "\(campaign.key) \(context.occurrence)",
                due: context.at.addingTimeInterval(delay), payload: context.json)
            count(campaign, "delayed")
            return
        }
        try decide(campaign, key: key, context)
    }

    /// Decides whether the profile gets the campaign's messages now (expiry, audience, re-eligibility), renders them,
    /// and writes the send requests to the outbox.
    mutating func decide(_ campaign: CampaignDefinition, key: String, _ context: TriggerContext) throws {
        guard campaign.enabled else { return }
        if let expiry = campaign.expiresAfter, now.timeIntervalSince(context.at) > expiry {
            count(campaign, "expired")
            Logger(label: "herald.campaigns").info(
                "late send dropped", metadata: ["campaign": "\(campaign.key)", "occurrence": "\(context.occurrence)"])
            return
        }
        if let audience = campaign.audience {
            let member = try Bool.fetchOne(
                db.cachedStatement(sql: "SELECT 1 FROM segment_members WHERE segment_key = ? AND profile_key = ?"),
                arguments: ["\(campaign.project)/\(audience)", key]) ?? false
            guard member else {
                count(campaign, "not_in_audience")
                return
            }
        }
        guard try eligible(campaign, key: key) else {
            count(campaign, "not_eligible")
            return
        }
        let values = values(key)
        guard values.exists else {
            count(campaign, "no_profile")
            return
        }
        guard try outsideQuietHours(campaign, key: key, values: values, context) else { return }
        // Every message over a frequency cap: not decided at all (a later trigger may still send it).
        let capped = !rules.config.frequencyCaps(of: campaign).isEmpty
        if capped, try !campaign.messages.contains(where: { try withinFrequencyCaps(campaign, key: key, channel: $0.channel) }) {
            for message in campaign.messages { frequencyCapped(campaign, channel: message.channel, occurrence: context.occurrence) }
            return
        }
        try db.executeCached(
            sql: "INSERT OR IGNORE INTO campaign_history (campaign_key, profile_key, occurrence, at) VALUES (?, ?, ?, ?)",
            arguments: [campaign.key, key, context.occurrence, WireTime.format(now)])
        guard db.changesCount == 1 else { return }  // decided before for this occurrence
        for (index, message) in campaign.messages.enumerated() {
            let step = "message-\(index)"
            if capped, try !withinFrequencyCaps(campaign, key: key, channel: message.channel) {
                frequencyCapped(campaign, channel: message.channel, occurrence: context.occurrence)
                continue
            }
            do {
                let request = try render(campaign, message: message, step: step, values: values, context)
                try countForFrequencyCaps(campaign, key: key, channel: message.channel, sendID: request.sendID)
                outputs.append(
                    PendingOutput(
                        topic: message.channel.topic.name, key: key, value: try Wire.encode(request),
                        headers: [KafkaHeader("herald-send-id", request.sendID)]))
                count(campaign, "sent")
                // The middle link of the correlation chain (ingest request log → this → the notifier's delivery line).
                // No profile key: the send id leads to it.
                var metadata: Logger.Metadata = [
                    "campaign": "\(campaign.key)", "send_id": "\(request.sendID)", "channel": "\(message.channel.rawValue)",
                    "trigger": "\(context.type)",
                ]
                if let id = context.requestID { metadata["request_id"] = "\(id)" }
                if let id = context.eventID { metadata["event_id"] = "\(id)" }
                Logger(label: "herald.campaigns").info("send decided", metadata: metadata)
            } catch let error as TemplateError {
                count(campaign, "render_failed")
                outputs.append(
                    renderFailure(campaign, step: step, key: key, occurrence: context.occurrence, reason: error.message))
            }
        }
    }

    /// Once per profile, at most N per period, or always.
    func eligible(_ campaign: CampaignDefinition, key: String) throws -> Bool {
        switch campaign.reeligibility {
        case .always: return true
        case .once:
            return try Bool.fetchOne(
                db.cachedStatement(sql: "SELECT 1 FROM campaign_history WHERE campaign_key = ? AND profile_key = ? LIMIT 1"),
                arguments: [campaign.key, key]) == nil
        case .limit(let limit, let period):
            let recent = try Int.fetchOne(
                db.cachedStatement(
                    sql: "SELECT count(*) FROM campaign_history WHERE campaign_key = ? AND profile_key = ? AND at > ?"),
                arguments: [campaign.key, key, WireTime.format(now.addingTimeInterval(-period))]) ?? 0
            return recent < limit
        }
    }

    /// 32 hex characters of SHA-256 over campaign, step, profile and occurrence.
    static func sendID(campaign: String, step: String, profileKey: String, occurrence: String) -> String {
        let digest = SHA256.hash(data: Data("\(campaign)\u{0}\(step)\u{0}\(profileKey)\u{0}\(occurrence)".utf8))
        return digest.prefix(16).hexString
    }

    func count(_ campaign: CampaignDefinition, _ outcome: String, by amount: Int = 1) {
        Counter(label: "herald_campaign_decisions_total", dimensions: [("campaign", campaign.key), ("outcome", outcome)])
            .increment(by: amount)
    }
}
