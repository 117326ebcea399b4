import Foundation

/// Landings (batch-rules §8.1, docs/in-app.md, "Landings"): an in-app message shown when a campaign's push is opened,
/// attached in one step by the push message's `landing`. The in-app message gets the trigger that shows it then,
/// `push_open` of the campaign; the rest (its audience, its re-eligibility, the app's sync) is an in-app message's.
extension HeraldConfiguration {
    /// Each landing's in-app message, with a `push_open` trigger of its campaign added (once); a landing the project
    /// does not define is an issue.
    mutating func attachLandings() -> [ConfigIssue] {
        var issues: [ConfigIssue] = []
        for campaign in campaigns.values.sorted(by: { $0.key < $1.key }) {
            for (index, message) in campaign.messages.enumerated() {
                guard let landing = message.landing else { continue }
                let key = "\(campaign.project)/\(landing)"
                guard let inApp = inAppMessages[key] else {
                    issues.append(
                        ConfigIssue(
                            file: campaign.origin.file, line: campaign.origin.line,
                            message: "campaign \(campaign.id): messages[\(index)].landing: no in-app message \(landing) in project \(campaign.project)"))
                    continue
                }
                guard !inApp.triggers.contains(where: { $0.kind == .pushOpen(campaign.id) && $0.condition == nil }) else { continue }
                inAppMessages[key] = inApp.adding(InAppMessageDefinition.Trigger(kind: .pushOpen(campaign.id), delay: nil))
            }
        }
        for message in inAppMessages.values.sorted(by: { $0.key < $1.key }) where message.triggers.isEmpty {
            issues.append(
                ConfigIssue(
                    file: message.origin.file, line: message.origin.line,
                    message: "in_app_message \(message.id): no triggers: give it one, or attach it to a campaign's push as its `landing`"))
        }
        return issues
    }
}

extension InAppMessageDefinition {
    /// The message with one more trigger.
    func adding(_ trigger: Trigger) -> InAppMessageDefinition {
        InAppMessageDefinition(
            id: id, project: project, name: name, enabled: enabled, kind: kind, priority: priority, triggers: triggers + [trigger],
            minTriggerInterval: minTriggerInterval, audience: audience, reeligibility: reeligibility, start: start, end: end,
            orientation: orientation, autoDismiss: autoDismiss, clickAction: clickAction, buttons: buttons, assetURL: assetURL,
            extras: extras, variants: variants, origin: origin)
    }
}
