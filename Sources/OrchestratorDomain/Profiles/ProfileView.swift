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
        guard let row = try ProfilesTable(db).row(key) else { return nil }
        func text(_ column: String) -> JSONValue { Self.text(row, column) }
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
                        JSONMember("first", .string(event.first)), JSONMember("last", .string(event.last)),
                        JSONMember("label", event.label.map(JSONValue.string) ?? .null),
                        JSONMember("tags", parsed(event.tags)), JSONMember("attributes", parsed(event.attributes)),
                    ])))
        }
        // Most recently seen first: its detected values stand in for the profile's when it has none of its own.
        let installations = try InstallationsTable(db).allRecentFirst(key)
        func detected(_ explicit: String, _ column: String) -> JSONValue {
            if let value = row[explicit] as String? { return .string(value) }
            return installations.lazy.compactMap { $0[column] as String? }.first.map(JSONValue.string) ?? .null
        }
        func latest(_ column: String) -> JSONValue {
            installations.compactMap { $0[column] as String? }.max().map(JSONValue.string) ?? .null
        }
        let located = installations.filter { $0["location_at"] as String? != nil }
            .max { ($0["location_at"] as String) < ($1["location_at"] as String) }
        let changelog = try PushChangelogTable(db).all(key).map { entry in
            JSONValue.object([
                JSONMember("at", .string(entry["at"])), JSONMember("installation_id", .string(entry["installation_id"])),
                JSONMember("change", .string(entry["change"])), JSONMember("token", Self.text(entry, "token")),
                JSONMember("detail", Self.text(entry, "detail")),
            ])
        }
        return .object([
            JSONMember("profile_key", .string(key)), JSONMember("project", text("project")),
            JSONMember("custom_id", text("custom_id")),
            JSONMember("email", email(row)), JSONMember("sms", sms(row)),
            JSONMember(
                "native",
                .object([
                    JSONMember("b.language", detected("language", "detected_language")),
                    JSONMember("b.region", detected("region", "detected_region")),
                    JSONMember("b.timezone", detected("timezone", "timezone")),
                    JSONMember("b.install_date", installations.compactMap { $0["install_date"] as String? }.min().map(JSONValue.string) ?? .null),
                    JSONMember("b.last_visit_date", latest("last_visit_at")),
                    JSONMember("b.last_push_date", latest("last_push_at")),
                    JSONMember("b.is_push_optin", .bool(installations.contains(where: ContactSnapshots.pushReachable))),
                    JSONMember("b.session_count", .number(String(installations.reduce(0) { $0 + ($1["session_count"] as Int64? ?? 0) }))),
                    JSONMember(
                        "b.session_seconds",
                        .number(JSONValue.literal(installations.reduce(0) { $0 + ($1["session_seconds"] as Double? ?? 0) }))),
                    JSONMember("b.first_session_date", installations.compactMap { $0["first_session_at"] as String? }.min().map(JSONValue.string) ?? .null),
                    JSONMember("b.last_session_date", latest("last_session_at")),
                ])),
            JSONMember("custom", .object(custom)), JSONMember("events", .object(events)),
            JSONMember("installations", .array(installations.map(installation))),
            JSONMember("location", located.map(location) ?? .null),
            JSONMember("push_changelog", .array(changelog)),
            JSONMember("purchases", try Purchases(db).json(key)),
            JSONMember("aliases", .array(try ProfileAliasesTable(db).aliases(key).map(aliasJSON))),
            JSONMember("created_at", text("created_at")), JSONMember("updated_at", text("updated_at")),
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
    static func installation(_ row: Row) -> JSONValue {
        func text(_ column: String) -> JSONValue { Self.text(row, column) }
        func flag(_ column: String) -> JSONValue { (row[column] as Bool?).map(JSONValue.bool) ?? .null }
        return .object([
            JSONMember("installation_id", text("installation_id")), JSONMember("app", text("app")),
            JSONMember("dev", .bool(row["dev"])),
            JSONMember(
                "native",
                .object([
                    JSONMember("b.app_version", text("app_version")), JSONMember("b.app_build", text("app_build")),
                    JSONMember("b.os_version", text("os_version")), JSONMember("b.sdk_version", text("sdk_version")),
                    JSONMember("b.device_brand", text("device_brand")), JSONMember("b.device_type", text("device_model")),
                    JSONMember("b.language", text("detected_language")), JSONMember("b.region", text("detected_region")),
                    JSONMember("b.timezone", text("timezone")), JSONMember("b.install_date", text("install_date")),
                    JSONMember("b.last_visit_date", text("last_visit_at")),
                    JSONMember("b.last_push_date", text("last_push_at")),
                    JSONMember("b.is_push_optin", .bool(ContactSnapshots.pushReachable(row))),
                    JSONMember("b.session_count", .number(String(row["session_count"] as Int64? ?? 0))),
                    JSONMember("b.session_seconds", .number(JSONValue.literal(row["session_seconds"] as Double? ?? 0))),
                    JSONMember("b.first_session_date", text("first_session_at")),
                    JSONMember("b.last_session_date", text("last_session_at")),
                ])),
            JSONMember("session_in_progress", row["open_session_id"] as String? == nil ? .null : .object([
                JSONMember("session_id", text("open_session_id")), JSONMember("started_at", text("open_session_at")),
            ])),
            JSONMember(
                "push",
                .object([
                    JSONMember("token", text("token")), JSONMember("environment", text("environment")),
                    JSONMember("token_updated_at", text("token_updated_at")),
                    JSONMember("notification_permission", text("notification_permission")),
                ])),
            JSONMember("opted_out", .bool(row["opted_out"])), JSONMember("opt_changed_at", text("opt_changed_at")),
            JSONMember(
                "data_collection",
                .object([JSONMember("geoip", flag("geoip")), JSONMember("device_model", flag("device_model_collection"))])),
            JSONMember("location", row["location_at"] as String? == nil ? .null : location(row)),
        ])
    }

    static func location(_ row: Row) -> JSONValue {
        func number(_ column: String) -> JSONValue {
            (row[column] as Double?).map { JSONValue.number(JSONValue.literal($0)) } ?? .null
        }
        return .object([
            JSONMember("latitude", number("latitude")), JSONMember("longitude", number("longitude")),
            JSONMember("accuracy", number("location_accuracy")), JSONMember("at", Self.text(row, "location_at")),
        ])
    }

    /// The email channel of a `profiles` row: address, marketing state and when it changed, and whether it bounced.
    static func email(_ row: Row) -> JSONValue {
        .object([
            JSONMember("address", text(row, "email")), JSONMember("marketing", text(row, "email_marketing")),
            JSONMember("marketing_changed_at", text(row, "email_marketing_changed_at")),
            JSONMember("bounced_at", text(row, "email_bounced_at")),
        ])
    }

    /// The SMS channel of a `profiles` row.
    static func sms(_ row: Row) -> JSONValue {
        .object([
            JSONMember("phone_number", text(row, "phone_number")), JSONMember("marketing", text(row, "sms_marketing")),
            JSONMember("marketing_changed_at", text(row, "sms_marketing_changed_at")),
        ])
    }

    static func text(_ row: Row, _ column: String) -> JSONValue {
        (row[column] as String?).map(JSONValue.string) ?? .null
    }

    /// Finds a profile in the partition databases of `directory` (any partition count): for the `herald profile show`
    /// command, which runs beside the orchestrator or on a copy of its data directory.
    package static func find(directory: String, key: String) throws -> JSONValue? {
        try DataDirectory.first(in: directory) { db in try json(db, key: key) }
    }
}
