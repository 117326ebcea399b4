import Foundation
import Shared

/// What made a campaign consider a profile, kept whole in a delay's timer.
struct TriggerContext: Sendable {
    var type: String
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

    var json: JSONValue {
        var members: [JSONMember] = [
            JSONMember("type", .string(type)), JSONMember("occurrence", .string(occurrence)),
            JSONMember("at", .string(WireTime.format(at))),
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
        type: String, eventName: String? = nil, eventID: String? = nil, occurrence: String, at: Date,
        attributes: JSONValue? = nil, label: String? = nil, properties: JSONValue? = nil, requestID: String? = nil
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
    }

    init?(json: JSONValue) {
        guard let type = json["type"]?.stringValue, let occurrence = json["occurrence"]?.stringValue,
            let at = json["at"]?.stringValue.flatMap(WireTime.parse)
        else { return nil }
        self.init(
            type: type, eventName: json["event_name"]?.stringValue, eventID: json["event_id"]?.stringValue,
            occurrence: occurrence, at: at, attributes: json["attributes"], label: json["label"]?.stringValue,
            properties: json["properties"], requestID: json["request_id"]?.stringValue)
    }

    /// A value of the trigger for conditions and templates: `event.<attribute>`, `event.label`, `trigger.<property>`.
    func value(_ namespace: String, _ name: String) -> SegmentValue? {
        if namespace == "event" {
            if name == "label" { return label.map(SegmentValue.string) }
            return attributes.flatMap { ProfileValues.attribute($0, name) }
        }
        guard namespace == "trigger", let properties, let value = properties[name] else { return nil }
        return ProfileValues.value(type: "", json: value)
    }
}
