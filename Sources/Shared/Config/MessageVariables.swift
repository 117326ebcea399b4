import Liquid

/// The names a message template reads (docs/templates.md): Herald's namespaces, and Braze's forms of the same.
package enum MessageVariables {
    /// Herald's namespaces and Braze's objects: `c`/`custom_attribute`, `b`, `event`/`event_properties`,
    /// `trigger`/`api_trigger_properties`, `campaign`, `content_blocks`, and a journey's entry event
    /// `entry`/`canvas_entry_properties` (in a campaign, the event that triggered it).
    package static let roots: Set<String> = [
        "c", "b", "event", "trigger", "custom_attribute", "event_properties", "api_trigger_properties", "campaign", "content_blocks",
        "entry", "canvas_entry_properties",
    ]

    /// Braze's standard attributes written `${name}`, and what each reads in Herald.
    package static let standardAttributes: [String: String] = [
        "${user_id}": "the profile's custom ID",
        "${braze_id}": "the profile's key",
        "${language}": "b.language",
        "${country}": "b.region",
        "${time_zone}": "b.timezone",
        "${email_address}": "the profile's email address",
        "${phone_number}": "the profile's phone number",
        "${first_name}": "c.first_name",
        "${last_name}": "c.last_name",
        "${gender}": "c.gender",
        "${date_of_birth}": "c.date_of_birth",
        "${city}": "c.city",
    ]

    /// The members of `campaign` (Braze's `campaign.${name}`).
    package static let campaignMembers: Set<String> = ["name", "api_id", "message_name", "dispatch_id"]

    /// The problems of a template's variables: a name it neither reads from a message nor sets itself.
    package static func problems(_ template: LiquidTemplate) -> [String] {
        let defined = template.definedNames
        var problems: [String] = []
        for path in template.variablePaths.sorted(by: { $0.joined(separator: ".") < $1.joined(separator: ".") }) {
            let root = path[0]
            if roots.contains(root) || standardAttributes[root] != nil || defined.contains(root) {
                if root == "campaign", path.count > 1, !campaignMembers.contains(path[1]) {
                    problems.append("campaign.\(path[1]): campaign has \(campaignMembers.sorted().joined(separator: ", "))")
                }
                continue
            }
            if root.hasPrefix("${") {
                problems.append("\(root): not a standard attribute (\(standardAttributes.keys.sorted().joined(separator: ", ")))")
            } else {
                problems.append("unknown variable `\(root)`: expected c., b., event., trigger., a Braze form or a name the template assigns")
            }
        }
        return problems
    }
}
