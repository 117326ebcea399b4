import GRDB
import Shared

/// A profile as operators and tests see it, under the names of the source documents (`b.` native, `c.` custom
/// attributes, `e.` events).
enum ProfileView {
    static func json(_ db: Database, key: String) throws -> JSONValue? {
        guard let row = try Row.fetchOne(db, sql: "SELECT * FROM profiles WHERE profile_key = ?", arguments: [key]) else {
            return nil
        }
        func text(_ column: String) -> JSONValue { Self.text(row, column) }
        var custom: [JSONMember] = []
        for attribute in try Row.fetchAll(
            db, sql: "SELECT name, value FROM profile_attributes WHERE profile_key = ? ORDER BY name", arguments: [key])
        {
            let value = (try? JSONParser.parse(Array((attribute["value"] as String).utf8))) ?? .null
            custom.append(JSONMember("c.\(attribute["name"] as String)", value))
        }
        var events: [JSONMember] = []
        for event in try Row.fetchAll(
            db, sql: "SELECT * FROM event_aggregates WHERE profile_key = ? ORDER BY name", arguments: [key])
        {
            func parsed(_ column: String) -> JSONValue {
                (event[column] as String?).flatMap { try? JSONParser.parse(Array($0.utf8)) } ?? .null
            }
            events.append(
                JSONMember(
                    "e.\(event["name"] as String)",
                    .object([
                        JSONMember("count", .number(String(event["count"] as Int64))),
                        JSONMember("first", .string(event["first_at"])), JSONMember("last", .string(event["last_at"])),
                        JSONMember("label", (event["last_label"] as String?).map(JSONValue.string) ?? .null),
                        JSONMember("tags", parsed("last_tags")), JSONMember("attributes", parsed("last_attributes")),
                    ])))
        }
        return .object([
            JSONMember("profile_key", .string(key)), JSONMember("project", text("project")),
            JSONMember("custom_id", text("custom_id")),
            JSONMember("email", email(row)), JSONMember("sms", sms(row)),
            JSONMember(
                "native",
                .object([
                    JSONMember("b.language", text("language")), JSONMember("b.region", text("region")),
                    JSONMember("b.timezone", text("timezone")),
                ])),
            JSONMember("custom", .object(custom)), JSONMember("events", .object(events)),
            JSONMember("created_at", text("created_at")), JSONMember("updated_at", text("updated_at")),
        ])
    }

    /// The email channel of a `profiles` row: address, marketing state and when it changed.
    static func email(_ row: Row) -> JSONValue {
        .object([
            JSONMember("address", text(row, "email")), JSONMember("marketing", text(row, "email_marketing")),
            JSONMember("marketing_changed_at", text(row, "email_marketing_changed_at")),
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
}
