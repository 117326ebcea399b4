import Foundation

/// `profile_update`: a profile edit and events (docs/ingest.md), at least one of them.
package struct ProfileUpdate: Sendable, Equatable {
    package var profile: ProfileEdit?
    package var events: [ValidatedEvent]?

    package init(profile: ProfileEdit?, events: [ValidatedEvent]? = nil) {
        self.profile = profile
        self.events = events
    }
}

/// `installation`: what the SDK reports about the installation (`POST /v1/app/installation`), each field validated on
/// its own: the data-collection flags first, then the string fields (`device_model: null` erases the model).
package struct InstallationReport: Sendable, Equatable {
    package struct Flag: Sendable, Equatable {
        /// `geoip` or `device_model`.
        package var name: String
        package var on: Bool

        package init(_ name: String, _ on: Bool) {
            self.name = name
            self.on = on
        }
    }

    package struct Field: Sendable, Equatable {
        /// `app_version`, `os_version`, `timezone`, `notification_permission`, …
        package var name: String
        /// nil: erased.
        package var value: String?

        package init(_ name: String, _ value: String?) {
            self.name = name
            self.value = value
        }
    }

    package var dataCollection: [Flag]
    package var fields: [Field]

    package init(dataCollection: [Flag], fields: [Field]) {
        self.dataCollection = dataCollection
        self.fields = fields
    }
}

/// `push_token`: the installation's push token (`POST /v1/app/push-token`).
package struct PushTokenRegistration: Sendable, Equatable {
    package var token: String
    package var environment: PushEnvironment

    package init(token: String, environment: PushEnvironment) {
        self.token = token
        self.environment = environment
    }
}

/// `location`: where the installation is (`POST /v1/app/location`).
package struct LocationReport: Sendable, Equatable {
    package var latitude: Double
    package var longitude: Double
    package var accuracy: Double?
    /// When it was there, if the app said.
    package var time: Date?

    package init(latitude: Double, longitude: Double, accuracy: Double? = nil, time: Date? = nil) {
        self.latitude = latitude
        self.longitude = longitude
        self.accuracy = accuracy
        self.time = time
    }
}

/// `campaign_trigger`: a server's trigger of an API-triggered campaign for one recipient (`POST /v1/campaigns/trigger`).
package struct CampaignTrigger: Sendable, Equatable {
    /// The campaign's id in the record's project.
    package var campaign: String
    /// Flat properties (strings, numbers, booleans), by name: templates read them as `trigger.<name>`.
    package var properties: [JSONMember]

    package init(campaign: String, properties: [JSONMember]) {
        self.campaign = campaign
        self.properties = properties
    }
}

/// `journey_trigger`: a server's API entry of a journey for one recipient (`POST /v1/journeys/trigger`).
package struct JourneyTrigger: Sendable, Equatable {
    /// The journey's id in the record's project.
    package var journey: String
    /// Flat properties (strings, numbers, booleans), by name: the journey reads them as `entry.<name>` (Braze:
    /// `canvas_entry_properties.${name}`).
    package var properties: [JSONMember]

    package init(journey: String, properties: [JSONMember]) {
        self.journey = journey
        self.properties = properties
    }
}

/// `push_send`: a transactional push to one device (`POST /v1/sends/push`): to the record's installation, or to its
/// `device_token` of `app`.
package struct TransactionalPush: Sendable, Equatable {
    /// A label for reports and metrics (`transactional` when none was given).
    package var campaign: String?
    /// The rendered notification's fields (`title`, `body`, `badge`, …), by name.
    package var notification: [JSONMember]
    /// The custom payload, typed as the client sent it.
    package var payload: [JSONMember]?
    /// The app of a raw token.
    package var app: String?
    /// A raw token's APNs environment.
    package var environment: PushEnvironment?
    /// How the send id is derived from the record (`send_id_version`, written by the ingest since version 2): a record
    /// applied again after an upgrade that changed the derivation still gets the id it had, so the notifier's ledger
    /// dedupes it. nil on records written before the field: their receipt time says which (`SendIDDerivation`).
    package var sendIDVersion: Int?
    /// What the ingest writes now (the orchestrator's `SendIDDerivation` has every version).
    package static let currentSendIDVersion = 2

    package init(
        campaign: String?, notification: [JSONMember], payload: [JSONMember]? = nil, app: String? = nil,
        environment: PushEnvironment? = nil, sendIDVersion: Int? = nil
    ) {
        self.campaign = campaign
        self.notification = notification
        self.payload = payload
        self.app = app
        self.environment = environment
        self.sendIDVersion = sendIDVersion
    }
}

// MARK: Wire

extension InstallationReport {
    var json: JSONValue {
        var members: [JSONMember] = []
        if !dataCollection.isEmpty {
            members.append(JSONMember("data_collection", .object(dataCollection.map { JSONMember($0.name, .bool($0.on)) })))
        }
        for field in fields { members.append(JSONMember(field.name, field.value.map(JSONValue.string) ?? .null)) }
        return .object(members)
    }

    init(wire value: JSONValue, path: String) throws(WireError) {
        let object = try WireObject(value, path: path)
        var flags: [Flag] = []
        var fields: [Field] = []
        for member in object.members {
            if member.key == "data_collection" {
                let collection = try WireObject(member.value, path: object.path(member.key))
                for flag in collection.members { flags.append(Flag(flag.key, try collection.bool(flag.key))) }
            } else {
                fields.append(Field(member.key, try object.optionalString(member.key)))
            }
        }
        self.init(dataCollection: flags, fields: fields)
    }
}

extension PushTokenRegistration {
    var json: JSONValue { .object([JSONMember("token", .string(token)), JSONMember("environment", .string(environment.rawValue))]) }

    init(wire value: JSONValue, path: String) throws(WireError) {
        let object = try WireObject(value, path: path)
        self.init(token: try object.string("token"), environment: try object.kind("environment", as: PushEnvironment.self))
    }
}

extension LocationReport {
    var json: JSONValue {
        var members = [
            JSONMember("latitude", .number(JSONValue.literal(latitude))), JSONMember("longitude", .number(JSONValue.literal(longitude))),
        ]
        if let accuracy { members.append(JSONMember("accuracy", .number(JSONValue.literal(accuracy)))) }
        if let time { members.append(JSONMember("time", .string(WireTime.format(time)))) }
        return .object(members)
    }

    init(wire value: JSONValue, path: String) throws(WireError) {
        let object = try WireObject(value, path: path)
        self.init(
            latitude: try object.double("latitude"), longitude: try object.double("longitude"),
            accuracy: try object.optionalDouble("accuracy"), time: try object.optionalDate("time"))
    }
}

extension TransactionalPush {
    var json: JSONValue {
        var members: [JSONMember] = []
        if let campaign { members.append(JSONMember("campaign", .string(campaign))) }
        members.append(JSONMember("notification", .object(notification)))
        if let payload { members.append(JSONMember("payload", .object(payload))) }
        if let app { members.append(JSONMember("app", .string(app))) }
        if let environment { members.append(JSONMember("environment", .string(environment.rawValue))) }
        if let sendIDVersion { members.append(JSONMember("send_id_version", .number(String(sendIDVersion)))) }
        return .object(members)
    }

    init(wire value: JSONValue, path: String) throws(WireError) {
        let object = try WireObject(value, path: path)
        let notification = try object.object("notification")
        for member in notification.members {
            guard case .string = member.value else { throw WireError(reason: "\(notification.path(member.key)): expected a string") }
        }
        self.init(
            campaign: try object.optionalString("campaign"), notification: notification.members,
            payload: try object.optionalObject("payload")?.members, app: try object.optionalString("app"),
            environment: try object.optionalKind("environment", as: PushEnvironment.self), sendIDVersion: try object.optionalInt("send_id_version"))
    }
}
