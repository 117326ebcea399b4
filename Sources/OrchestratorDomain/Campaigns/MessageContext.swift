import Foundation
import GRDB
import Liquid
import Shared

/// The variables a message's templates read for one profile and trigger (docs/templates.md): Herald's namespaces
/// and Braze's names for the same, built only for the roots the templates use.
struct MessageContext {
    /// The natives `b.` reads, as segments do.
    static let natives = [
        "language", "region", "timezone", "custom_id", "install_date", "last_visit_date", "last_push_date", "is_push_optin",
        "created_at", "app_version", "app_build", "os_version", "sdk_version", "device_brand", "device_type",
        "session_count", "session_seconds", "first_session_date", "last_session_date",
    ]

    let values: ProfileValues
    let context: TriggerContext
    /// nil for a preview outside any campaign (`herald template render --profile`).
    let campaign: CampaignDefinition?
    let step: String

    /// The variables for templates reading `paths` (`LiquidTemplate.variablePaths`).
    func variables(for paths: Set<[String]>) -> LiquidObject {
        let roots = Set(paths.map { $0[0] })
        var variables = LiquidObject()
        if !roots.isDisjoint(with: ["c", "custom_attribute"]) || roots.contains(where: { $0.hasPrefix("${") }) {
            let attributes = customAttributes()
            variables["c"] = .object(attributes)
            variables["custom_attribute"] = .object(attributes)
            for name in ["first_name", "last_name", "gender", "date_of_birth", "city"] {
                if let value = attributes[name] { variables["${\(name)}"] = value }
            }
        }
        if roots.contains("b") || roots.contains(where: { $0.hasPrefix("${") }) {
            // Only the natives named (each may read the installations), all of them when `b` is read whole.
            let named = paths.filter { $0[0] == "b" }
            let wanted = named.contains { $0.count == 1 } ? Self.natives : named.compactMap { $0.count > 1 ? $0[1] : nil }
            var natives = LiquidObject()
            for name in Set(wanted + ["language", "region", "timezone", "custom_id"]) where Self.natives.contains(name) {
                if let value = values.read(SegmentPath("b", [name])) { natives[name] = Self.liquid(value) }
            }
            variables["b"] = .object(natives)
            variables["${user_id}"] = natives["custom_id"]
            variables["${language}"] = natives["language"]
            variables["${country}"] = natives["region"]
            variables["${time_zone}"] = natives["timezone"]
            variables["${braze_id}"] = .string(values.key)
            variables["${email_address}"] = values.profile?.email.map(LiquidValue.string)
            variables["${phone_number}"] = values.profile?.phoneNumber.map(LiquidValue.string)
        }
        // A journey's messages read the event that entered it as `entry` (Braze: `canvas_entry_properties`), or the
        // API call's properties; their trigger is that entry.
        if !roots.isDisjoint(with: ["event", "event_properties", "entry", "canvas_entry_properties"]) {
            var event = LiquidObject()
            if case .object(let members)? = context.attributes {
                for member in members {
                    // Typed keys (`price.f`) are read by their name; the suffix says how (`f` is always a float).
                    let dot = member.key.lastIndex(of: ".") ?? member.key.endIndex
                    let type = dot < member.key.endIndex ? AttributeType(rawValue: String(member.key[member.key.index(after: dot)...])) : nil
                    event[String(member.key[..<dot])] = Self.liquid(type: type, json: member.value)
                }
            }
            if let label = context.label { event["label"] = .string(label) }
            for root in ["event", "event_properties"] { variables[root] = .object(event) }
            // Entered by the API: the call's entry properties.
            let entry = context.type == .api ? context.properties.map(LiquidValue.init(json:)) ?? .object(LiquidObject()) : .object(event)
            for root in ["entry", "canvas_entry_properties"] { variables[root] = entry }
        }
        if !roots.isDisjoint(with: ["trigger", "api_trigger_properties"]) {
            let properties = context.properties.map(LiquidValue.init(json:)) ?? .object(LiquidObject())
            variables["trigger"] = properties
            variables["api_trigger_properties"] = properties
        }
        if roots.contains("campaign"), let campaign {
            variables["campaign"] = .object([
                "name": .string(campaign.name), "api_id": .string(campaign.id), "message_name": .string(step),
                "dispatch_id": .string(context.occurrence),
            ])
        }
        return variables
    }

    private func customAttributes() -> LiquidObject {
        var object = LiquidObject()
        for (name, attribute) in values.customAttributes().sorted(by: { $0.key < $1.key }) {
            guard let json = try? JSONParser.parse(Array(attribute.value.utf8)) else { continue }
            object[name] = Self.liquid(type: attribute.type, json: json)
        }
        return object
    }

    /// A typed value: `f` a float even when whole, `i` an integer, the rest as JSON reads (dates stay ISO 8601 text,
    /// which `date` reads).
    static func liquid(type: AttributeType?, json: JSONValue) -> LiquidValue {
        switch (type, json) {
        case (.double?, .number(let text)): .double(Double(text) ?? 0)
        case (.integer?, .number(let text)): Int(text).map(LiquidValue.int) ?? .double(Double(text) ?? 0)
        default: LiquidValue(json: json)
        }
    }

    static func liquid(_ value: SegmentValue) -> LiquidValue {
        switch value {
        case .string(let text): .string(text)
        case .number(let number): number == number.rounded() && abs(number) < 1e15 ? .int(Int(number)) : .double(number)
        case .bool(let flag): .bool(flag)
        case .time(let date): .string("\(wire: date)")
        case .strings(let items): .array(items.map(LiquidValue.string))
        }
    }
}
