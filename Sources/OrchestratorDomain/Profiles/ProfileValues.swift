import Foundation
import GRDB
import PartitionStore
import Shared

/// A profile's values under the segment language's paths (docs/segments.md), read from the partition's database on
/// first use and kept for the rest of one evaluation.
final class ProfileValues {
    let db: Database
    let key: String
    private var loadedProfile = false
    private var profileRecord: ProfileRecord?
    private var attributes: [String: StoredAttribute]?
    private var installations: [InstallationRecord.SegmentFacts]?
    private var events: [String: EventAggregate?] = [:]
    private var allTags: Set<String>?
    /// Values already read: conditions read a path twice (the answer, then the next flip) and segments share paths.
    private var cache: [SegmentPath: SegmentValue?] = [:]
    /// The project's time zone, for a profile with none of its own and no installation's.
    let defaultTimeZone: String

    init(db: Database, key: String, defaultTimeZone: String) {
        self.db = db
        self.key = key
        self.defaultTimeZone = defaultTimeZone
    }

    /// With its project's default time zone from the rules.
    convenience init(db: Database, key: String, rules: EngagementRules) {
        self.init(db: db, key: key, defaultTimeZone: rules.config.defaultTimeZone(project: ProfileKey.project(of: key)))
    }

    /// With the profile's row, and its custom attributes unless nil, already read (a backfill reads them for many
    /// profiles at once).
    init(db: Database, key: String, defaultTimeZone: String, profile: ProfileRecord, attributes: [String: StoredAttribute]?) {
        self.db = db
        self.key = key
        self.defaultTimeZone = defaultTimeZone
        profileRecord = profile
        loadedProfile = true
        self.attributes = attributes
    }

    var profile: ProfileRecord? {
        if !loadedProfile {
            profileRecord = try? ProfilesTable(db).record(key)
            loadedProfile = true
        }
        return profileRecord
    }

    var exists: Bool { profile != nil }

    func read(_ path: SegmentPath) -> SegmentValue? {
        if let cached = cache[path] { return cached }
        let value = load(path)
        cache[path] = value
        return value
    }

    private func load(_ path: SegmentPath) -> SegmentValue? {
        guard let profile, let first = path.names.first else { return nil }
        switch ProfileNamespace(rawValue: path.namespace) {
        case .custom:
            guard path.names.count == 1, let attribute = customAttributes()[first] else { return nil }
            return Self.value(type: attribute.type, json: attribute.value)
        case .native: return native(first, profile)
        case .event:
            guard path.names.count >= 2, let aggregate = event(first) else { return nil }
            return eventValue(aggregate, Array(path.names.dropFirst()))
        case .tags:
            return tags().contains(path.names.joined(separator: ".")) ? .bool(true) : nil
        case .email:
            switch first {
            case "reachable": return .bool(profile.email != nil && profile.emailBouncedAt == nil)
            case "marketing": return profile.emailMarketing.map(SegmentValue.string)
            case "address": return profile.email.map(SegmentValue.string)
            default: return nil
            }
        case .sms:
            switch first {
            case "reachable": return .bool(profile.phoneNumber != nil)
            case "marketing": return profile.smsMarketing.map(SegmentValue.string)
            default: return nil
            }
        case .push:
            return first == "reachable" ? .bool(installationFacts().contains(where: \.pushReachable)) : nil
        case .location:
            // The last known location: the most recent of the installations'.
            guard path.names.count == 1, let location = (try? InstallationsTable(db).lastLocation(key)) ?? nil else { return nil }
            switch first {
            case "latitude": return location.latitude.map(SegmentValue.number)
            case "longitude": return location.longitude.map(SegmentValue.number)
            case "accuracy": return location.accuracy.map(SegmentValue.number)
            case "at": return .time(location.at)
            default: return nil
            }
        case nil: return nil
        }
    }

    /// The profile's time zone (`b.timezone`): its own `$timezone`, else its most recently seen installation's, else
    /// the project's default. Quiet hours and local-time sends read it; so do segments.
    var timeZoneName: String {
        if case .string(let name)? = read(SegmentPath("b", ["timezone"])) { return name }
        return defaultTimeZone
    }

    var timeZone: TimeZone { TimeZones.named(timeZoneName) }

    /// The profile's language: its own, else the most recently seen installation's.
    var language: String? {
        guard let profile, case .string(let language)? = native("language", profile) else { return nil }
        return language
    }

    // MARK: Parts

    /// The custom attributes, read once (templates read them whole).
    func customAttributes() -> [String: StoredAttribute] {
        if let attributes { return attributes }
        let loaded = (try? ProfileAttributesTable(db).all(key)) ?? [:]
        attributes = loaded
        return loaded
    }

    /// What natives and push reachability read of the profile's installations, most recently seen first.
    private func installationFacts() -> [InstallationRecord.SegmentFacts] {
        if let installations { return installations }
        let facts = (try? InstallationsTable(db).segmentFacts(key)) ?? []
        installations = facts
        return facts
    }

    private func event(_ name: String) -> EventAggregate? {
        if let cached = events[name] { return cached }
        let aggregate = try? EventAggregatesTable(db).get(key, name: name)
        events[name] = aggregate
        return aggregate
    }

    private func tags() -> Set<String> {
        if let allTags { return allTags }
        var found: Set<String> = []
        if let rows = try? EventAggregatesTable(db).tags(key) {
            for text in rows {
                if case .array(let items)? = try? JSONParser.parse(Array(text.utf8)) {
                    for case .string(let tag) in items { found.insert(tag) }
                }
            }
        }
        allTags = found
        return found
    }

    private func native(_ name: String, _ profile: ProfileRecord) -> SegmentValue? {
        func time(_ date: Date?) -> SegmentValue? { date.map(SegmentValue.time) }
        /// The most recently seen installation's value.
        func latest(_ value: (InstallationRecord.SegmentFacts) -> String?) -> String? {
            for facts in installationFacts() { if let found = value(facts) { return found } }
            return nil
        }
        var installations: [InstallationRecord.SegmentFacts] { installationFacts() }
        switch name {
        // The profile's own value first: installations are read only when it has none.
        case "language": return (profile.language ?? latest(\.detectedLanguage)).map(SegmentValue.string)
        case "region": return (profile.region ?? latest(\.detectedRegion)).map(SegmentValue.string)
        case "timezone": return .string(profile.timezone ?? latest(\.timezone) ?? defaultTimeZone)
        case "custom_id": return profile.customID.map(SegmentValue.string)
        case "install_date": return time(installations.map(\.installDate).min())
        case "last_visit_date": return time(installations.map(\.lastVisitAt).max())
        case "last_push_date": return time(installations.compactMap(\.lastPushAt).max())
        case "is_push_optin": return .bool(installations.contains(where: \.pushReachable))
        case "created_at": return .time(profile.createdAt)
        case "app_version": return latest(\.appVersion).map(SegmentValue.string)
        case "app_build": return latest(\.appBuild).map(SegmentValue.string)
        case "os_version": return latest(\.osVersion).map(SegmentValue.string)
        case "sdk_version": return latest(\.sdkVersion).map(SegmentValue.string)
        case "device_brand": return latest(\.deviceBrand).map(SegmentValue.string)
        case "device_type": return latest(\.deviceModel).map(SegmentValue.string)
        case "session_count": return .number(installations.reduce(0) { $0 + Double($1.sessionCount) })
        case "session_seconds": return .number(installations.reduce(0) { $0 + $1.sessionSeconds })
        case "first_session_date": return time(installations.compactMap(\.firstSessionAt).min())
        case "last_session_date": return time(installations.compactMap(\.lastSessionAt).max())
        default: return nil
        }
    }

    private func eventValue(_ aggregate: EventAggregate, _ names: [String]) -> SegmentValue? {
        switch names.joined(separator: ".") {
        case "count": return .number(Double(aggregate.count))
        case "first": return .time(aggregate.first)
        case "last": return .time(aggregate.last)
        case "label": return aggregate.label.map(SegmentValue.string)
        default:
            guard let attributes = try? JSONParser.parse(Array(aggregate.attributes.utf8)) else { return nil }
            return Self.attribute(attributes, names.joined(separator: "."))
        }
    }

    /// An event attribute by its name without the type suffix (`price` finds `price.f`).
    static func attribute(_ attributes: JSONValue, _ name: String) -> SegmentValue? {
        guard case .object(let members) = attributes else { return nil }
        for member in members {
            guard let dot = member.key.lastIndex(of: "."), member.key[..<dot] == name else { continue }
            return value(type: AttributeType(rawValue: String(member.key[member.key.index(after: dot)...])), json: member.value)
        }
        return nil
    }

    /// A typed stored value (type suffix `s`, `i`, `f`, `b`, `t`, `u`, `a`) as a segment value.
    static func value(type: AttributeType?, json text: String) -> SegmentValue? {
        guard let json = try? JSONParser.parse(Array(text.utf8)) else { return nil }
        return value(type: type, json: json)
    }

    /// `type`: the value's, if known (a time is a string on the wire).
    static func value(type: AttributeType?, json: JSONValue) -> SegmentValue? {
        switch (type, json) {
        case (.time?, .string): return json.timeValue.map(SegmentValue.time)
        case (_, .string(let text)): return .string(text)
        case (_, .number(let literal)): return Double(literal).map(SegmentValue.number)
        case (_, .bool(let flag)): return .bool(flag)
        case (_, .array(let items)):
            return .strings(items.compactMap { if case .string(let text) = $0 { text } else { nil } })
        default: return nil
        }
    }
}
