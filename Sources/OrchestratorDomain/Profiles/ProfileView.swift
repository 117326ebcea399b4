import Foundation
import GRDB
import PartitionStore
import Shared

/// A profile as operators and tests see it, under the names of the source documents (`b.` native, `c.` custom
/// attributes, `e.` events).
package enum ProfileView {
    /// The profile as JSON: channels, natives (profile-level and per installation), custom attributes, events,
    /// installations, last known location and the push changelog.
    package static func json(_ db: Database, key: String) throws -> JSONValue? {
        guard let profile = try ProfilesTable(db).record(key) else { return nil }
        var custom: [JSONMember] = []
        for attribute in try ProfileAttributesTable(db).allInOrder(key) {
            let value = (try? JSONParser.parse(Array(attribute.attribute.value.utf8))) ?? .null
            custom.append(JSONMember("c.\(attribute.name)", value))
        }
        var events: [JSONMember] = []
        for event in try EventAggregatesTable(db).all(key) {
            func parsed(_ text: String?) -> JSONValue { text.flatMap { try? JSONParser.parse(Array($0.utf8)) } ?? .null }
            events.append(
                JSONMember(
                    "e.\(event.name)",
                    .object([
                        JSONMember("count", .number(String(event.count))),
                        JSONMember("first", .time(event.first)), JSONMember("last", .time(event.last)),
                        JSONMember("label", event.label.map(JSONValue.string) ?? .null),
                        JSONMember("tags", parsed(event.tags)), JSONMember("attributes", parsed(event.attributes)),
                    ])))
        }
        // Most recently seen first: its detected values stand in for the profile's when it has none of its own.
        let installations = try InstallationsTable(db).allRecentFirst(key)
        func detected(_ own: String?, _ value: (InstallationRecord) -> String?) -> JSONValue {
            if let own { return .string(own) }
            for installation in installations { if let found = value(installation) { return .string(found) } }
            return .null
        }
        let located = installations.compactMap(\.location).max { $0.at < $1.at }
        let changelog = try PushChangelogTable(db).all(key).map { entry in
            JSONValue.object([
                JSONMember("at", .time(entry.at)), JSONMember("installation_id", .string(entry.installationID)),
                JSONMember("change", .string(entry.change)), JSONMember("token", text(entry.token)),
                JSONMember("detail", text(entry.detail)),
            ])
        }
        return .object([
            JSONMember("profile_key", .string(key)), JSONMember("project", .string(profile.project)),
            JSONMember("custom_id", text(profile.customID)),
            JSONMember("email", email(profile)), JSONMember("sms", sms(profile)),
            JSONMember(
                "native",
                .object([
                    JSONMember("b.language", detected(profile.language, \.facts.detectedLanguage)),
                    JSONMember("b.region", detected(profile.region, \.facts.detectedRegion)),
                    JSONMember("b.timezone", detected(profile.timezone, \.facts.timezone)),
                    JSONMember("b.install_date", .time(installations.map(\.facts.installDate).min())),
                    JSONMember("b.last_visit_date", .time(installations.map(\.facts.lastVisitAt).max())),
                    JSONMember("b.last_push_date", .time(installations.compactMap(\.facts.lastPushAt).max())),
                    JSONMember("b.is_push_optin", .bool(installations.contains(where: \.facts.pushReachable))),
                    JSONMember("b.session_count", .number(String(installations.reduce(0) { $0 &+ $1.sessionCount }))),
                    JSONMember("b.session_seconds", .number(JSONValue.literal(installations.reduce(0) { $0 + $1.sessionSeconds }))),
                    JSONMember("b.first_session_date", .time(installations.compactMap(\.facts.firstSessionAt).min())),
                    JSONMember("b.last_session_date", .time(installations.compactMap(\.facts.lastSessionAt).max())),
                ])),
            JSONMember("custom", .object(custom)), JSONMember("events", .object(events)),
            JSONMember("installations", .array(installations.map(installation))),
            JSONMember("location", located.map(location) ?? .null),
            JSONMember("push_changelog", .array(changelog)),
            JSONMember("purchases", try Purchases(db).json(key)),
            JSONMember("aliases", .array(try ProfileAliasesTable(db).aliases(key).map(aliasJSON))),
            JSONMember("created_at", .time(profile.createdAt)), JSONMember("updated_at", .time(profile.updatedAt)),
        ])
    }

    static func aliasJSON(_ alias: UserAlias) -> JSONValue {
        .object([JSONMember("alias_label", .string(alias.label)), JSONMember("alias_name", .string(alias.name))])
    }

    /// What an alias names, read at its home: the alias-only profile, or `{"alias", "belongs_to": <custom ID>}` once a
    /// profile holds it (that profile lives in its own partition); nil when the alias is unknown here.
    package static func alias(_ db: Database, project: String, alias: UserAlias) throws -> JSONValue? {
        let home = ProfileKey.alias(project, alias)
        if let profile = try json(db, key: home) { return profile }
        guard let holder = try AliasLinksTable(db).holder(project: project, alias) else { return nil }
        return .object([
            JSONMember("profile_key", .string(home)), JSONMember("alias", aliasJSON(alias)),
            JSONMember("belongs_to", .string(holder)),
        ])
    }

    /// One installation, its natives under their `b.` names.
    static func installation(_ installation: InstallationRecord) -> JSONValue {
        func flag(_ value: Bool?) -> JSONValue { value.map(JSONValue.bool) ?? .null }
        return .object([
            JSONMember("installation_id", .string(installation.installationID)), JSONMember("app", text(installation.app)),
            JSONMember("dev", .bool(installation.dev)),
            JSONMember(
                "native",
                .object([
                    JSONMember("b.app_version", text(installation.appVersion)), JSONMember("b.app_build", text(installation.appBuild)),
                    JSONMember("b.os_version", text(installation.osVersion)), JSONMember("b.sdk_version", text(installation.sdkVersion)),
                    JSONMember("b.device_brand", text(installation.deviceBrand)), JSONMember("b.device_type", text(installation.deviceModel)),
                    JSONMember("b.language", text(installation.detectedLanguage)), JSONMember("b.region", text(installation.detectedRegion)),
                    JSONMember("b.timezone", text(installation.timezone)), JSONMember("b.install_date", .time(installation.installDate)),
                    JSONMember("b.last_visit_date", .time(installation.lastVisitAt)),
                    JSONMember("b.last_push_date", .time(installation.lastPushAt)),
                    JSONMember("b.is_push_optin", .bool(installation.pushReachable)),
                    JSONMember("b.session_count", .number(String(installation.sessionCount))),
                    JSONMember("b.session_seconds", .number(JSONValue.literal(installation.sessionSeconds))),
                    JSONMember("b.first_session_date", .time(installation.firstSessionAt)),
                    JSONMember("b.last_session_date", .time(installation.lastSessionAt)),
                ])),
            JSONMember("session_in_progress", installation.openSession.map { session in
                JSONValue.object([JSONMember("session_id", .string(session.id)), JSONMember("started_at", .time(session.at))])
            } ?? .null),
            JSONMember(
                "push",
                .object([
                    JSONMember("token", text(installation.token)), JSONMember("environment", text(installation.environment?.rawValue)),
                    JSONMember("token_updated_at", .time(installation.tokenUpdatedAt)),
                    JSONMember("notification_permission", text(installation.notificationPermission)),
                ])),
            JSONMember("opted_out", .bool(installation.optedOut)), JSONMember("opt_changed_at", .time(installation.optChangedAt)),
            JSONMember(
                "data_collection",
                .object([JSONMember("geoip", flag(installation.geoip)), JSONMember("device_model", flag(installation.deviceModelCollection))])),
            JSONMember("location", installation.location.map(location) ?? .null),
        ])
    }

    static func location(_ location: InstallationRecord.Location) -> JSONValue {
        func number(_ value: Double?) -> JSONValue { value.map { JSONValue.number(JSONValue.literal($0)) } ?? .null }
        return .object([
            JSONMember("latitude", number(location.latitude)), JSONMember("longitude", number(location.longitude)),
            JSONMember("accuracy", number(location.accuracy)), JSONMember("at", .time(location.at)),
        ])
    }

    /// The email channel of a profile: address, marketing state and when it changed, and whether it bounced.
    static func email(_ profile: ProfileRecord) -> JSONValue {
        .object([
            JSONMember("address", text(profile.email)), JSONMember("marketing", text(profile.emailMarketing)),
            JSONMember("marketing_changed_at", .time(profile.emailMarketingChangedAt)),
            JSONMember("bounced_at", .time(profile.emailBouncedAt)),
        ])
    }

    /// The SMS channel of a profile.
    static func sms(_ profile: ProfileRecord) -> JSONValue {
        .object([
            JSONMember("phone_number", text(profile.phoneNumber)), JSONMember("marketing", text(profile.smsMarketing)),
            JSONMember("marketing_changed_at", .time(profile.smsMarketingChangedAt)),
        ])
    }

    static func text(_ value: String?) -> JSONValue { value.map(JSONValue.string) ?? .null }

    /// Finds a profile in the partition databases of `directory` (any partition count): for the `herald profile show`
    /// command, which runs beside the orchestrator or on a copy of its data directory.
    package static func find(directory: String, key: String) throws -> JSONValue? {
        try DataDirectory.first(in: directory) { db in try json(db, key: key) }
    }
}
