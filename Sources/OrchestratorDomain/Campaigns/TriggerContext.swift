import Foundation
import Shared

/// What made a campaign consider a profile, kept whole in a delay's timer.
struct TriggerContext: Sendable {
    var type: TriggerType
    var eventName: String?
    /// The record that triggered (event or API call), if any.
    var eventID: String?
    /// Makes the send id unique per trigger: the same occurrence gives the same send.
    var occurrence: String
    var at: Date
    /// The event's typed attributes (`price.f`), its label, or the API call's properties.
    var attributes: JSONValue?
    var label: String?
    var properties: JSONValue?
    /// The ingest request behind the trigger, if any (kept through delays).
    var requestID: String?
    /// A purchase's revenue in US dollars (its price × quantity at the project's rate): the only revenue a conversion
    /// adds up. Not kept through delays (a conversion is counted when its event is applied).
    var revenueUSD: Double?
    /// The write came from the customer's servers (or the orchestrator), not from a key shipped in apps or web pages:
    /// what a conversion counting server writes only reads. Not kept through delays.
    var fromServer = false

    var json: JSONValue {
        var members: [JSONMember] = [
            JSONMember("type", .string(type.rawValue)), JSONMember("occurrence", .string(occurrence)),
            JSONMember("at", .time(at)),
        ]
        if let eventName { members.append(JSONMember("event_name", .string(eventName))) }
        if let eventID { members.append(JSONMember("event_id", .string(eventID))) }
        if let attributes { members.append(JSONMember("attributes", attributes)) }
        if let label { members.append(JSONMember("label", .string(label))) }
        if let properties { members.append(JSONMember("properties", properties)) }
        if let requestID { members.append(JSONMember("request_id", .string(requestID))) }
        return .object(members)
    }

    init(
        type: TriggerType, eventName: String? = nil, eventID: String? = nil, occurrence: String, at: Date,
        attributes: JSONValue? = nil, label: String? = nil, properties: JSONValue? = nil, requestID: String? = nil,
        revenueUSD: Double? = nil, fromServer: Bool = false
    ) {
        self.type = type
        self.eventName = eventName
        self.eventID = eventID
        self.occurrence = occurrence
        self.at = at
        self.attributes = attributes
        self.label = label
        self.properties = properties
        self.requestID = requestID
        self.revenueUSD = revenueUSD
        self.fromServer = fromServer
    }

    init?(json: JSONValue) {
        guard let type = json["type"]?.stringValue.flatMap(TriggerType.init(rawValue:)), let occurrence = json["occurrence"]?.stringValue,
            let at = json["at"]?.timeValue
        else { return nil }
        self.init(
            type: type, eventName: json["event_name"]?.stringValue, eventID: json["event_id"]?.stringValue,
            occurrence: occurrence, at: at, attributes: json["attributes"], label: json["label"]?.stringValue,
            properties: json["properties"], requestID: json["request_id"]?.stringValue)
    }

    /// A value of the entry of a journey this trigger entered (`entry.<name>`): the event's attribute, or the API
    /// call's property.
    func entryValue(_ name: String) -> SegmentValue? {
        type == .api ? value("trigger", name) : value("event", name)
    }

    /// A value of the trigger for conditions and templates: `event.<attribute>`, `event.label`, `trigger.<property>`.
    func value(_ namespace: String, _ name: String) -> SegmentValue? {
        if namespace == "event" {
            if name == "label" { return label.map(SegmentValue.string) }
            return attributes.flatMap { ProfileValues.attribute($0, name) }
        }
        guard namespace == "trigger", let properties, let value = properties[name] else { return nil }
        return ProfileValues.value(type: nil, json: value)
    }
}
