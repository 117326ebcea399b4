import Foundation
import GRDB
import PartitionStore
import Shared

/// An installation's row under the profile that holds it: what the SDK reports, its push token, permission, opt-out
/// and location, first and last seen.
enum Installations {
    static func row(_ db: Database, key: String, installationID: String) throws -> Row? {
        try Row.fetchOne(
            db.cachedStatement(sql: "SELECT * FROM installations WHERE profile_key = ? AND installation_id = ?"),
            arguments: [key, installationID])
    }

    /// Whether the installation is opted out; nil when the profile does not hold it.
    static func optedOut(_ db: Database, key: String, installationID: String) throws -> Bool? {
        try Bool.fetchOne(
            db.cachedStatement(sql: "SELECT opted_out FROM installations WHERE profile_key = ? AND installation_id = ?"),
            arguments: [key, installationID])
    }

    static func delete(_ db: Database, key: String, installationID: String) throws -> Bool {
        try db.executeCached(sql: "DELETE FROM installations WHERE profile_key = ? AND installation_id = ?",
            arguments: [key, installationID])
        return db.changesCount > 0
    }

    /// Creates the row if needed; first seen is the install date, last seen the last visit.
    static func touch(_ db: Database, write: Write, key: String) throws {
        guard let installationID = write.installationID else { return }
        try db.executeCached(sql: """
                INSERT INTO installations (profile_key, installation_id, project, app, dev, install_date, last_visit_at,
                    updated_at)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                ON CONFLICT (profile_key, installation_id) DO UPDATE SET
                    app = coalesce(excluded.app, app), dev = excluded.dev,
                    install_date = min(install_date, excluded.install_date),
                    last_visit_at = max(last_visit_at, excluded.last_visit_at),
                    updated_at = max(updated_at, excluded.updated_at)
                """,
            arguments: [key, installationID, write.project, write.app, write.dev, write.time, write.time, write.time])
    }

    /// The `installation` op's string fields, stored in columns of the same names.
    static let fieldColumns: Set<String> = [
        "app_version", "app_build", "os_version", "sdk_version", "device_brand", "device_model", "detected_language",
        "detected_region", "timezone", "notification_permission",
    ]

    /// The SDK's installation fields (`installation` op); returns whether push reachability changed.
    ///
    /// The data-collection flags are applied first, and stored: a device model is kept only while the installation's
    /// stored `device_model` flag is not false (batch-rules §9), whichever request or SDK sends it; `null` always
    /// erases it.
    static func applyFields(_ db: Database, write: Write, fields: JSONValue) throws -> Bool {
        guard case .object(let members) = fields, let installationID = write.installationID else { return false }
        let key = write.profileKey
        if case .object(let flags)? = fields["data_collection"] {
            for flag in flags {
                guard case .bool(let on) = flag.value else { continue }
                let column = flag.key == "geoip" ? "geoip" : "device_model_collection"
                // Turning device model collection off erases the stored model (batch-rules §9).
                let erase = flag.key == "device_model" && !on ? ", device_model = NULL" : ""
                try db.executeCached(
                    sql: "UPDATE installations SET \(column) = ?\(erase) WHERE profile_key = ? AND installation_id = ?",
                    arguments: [on, key, installationID])
            }
        }
        var permissionChanged = false
        for member in members where fieldColumns.contains(member.key) {
            let value = member.value.stringValue
            let consent = member.key == "device_model" ? " AND (? IS NULL OR device_model_collection IS NOT 0)" : ""
            var arguments: StatementArguments = [value, key, installationID, value]
            if !consent.isEmpty { arguments += [value] }
            try db.executeCached(
                sql: """
                    UPDATE installations SET \(member.key) = ?
                    WHERE profile_key = ? AND installation_id = ? AND \(member.key) IS NOT ?\(consent)
                    """, arguments: arguments)
            if member.key == "notification_permission" && db.changesCount > 0 { permissionChanged = true }
        }
        return permissionChanged
    }

    /// Location, at most one every 30 seconds per installation (batch-rules §3.3): an update less than 30 s after the
    /// last one kept, or older than it, is ignored.
    static func applyLocation(_ db: Database, write: Write, location: JSONValue) throws {
        guard let installationID = write.installationID,
            case .number(let latitude)? = location["latitude"], case .number(let longitude)? = location["longitude"]
        else { return }
        var at = write.receivedAt
        if case .string(let text)? = location["time"], let time = WireTime.parse(text) { at = time }
        let key = write.profileKey
        if let last = (try row(db, key: key, installationID: installationID)?["location_at"] as String?)
            .flatMap(WireTime.parse), at.timeIntervalSince(last) < 30
        {
            return
        }
        var accuracy: Double?
        if case .number(let literal)? = location["accuracy"] { accuracy = Double(literal) }
        try db.executeCached(sql: """
                UPDATE installations SET latitude = ?, longitude = ?, location_accuracy = ?, location_at = ?
                WHERE profile_key = ? AND installation_id = ?
                """,
            arguments: [Double(latitude), Double(longitude), accuracy, WireTime.format(at), key, installationID])
    }

    /// Opt-out and opt-in; returns whether the state changed.
    static func setOptedOut(_ db: Database, write: Write, _ optedOut: Bool) throws -> Bool {
        guard let installationID = write.installationID else { return false }
        try db.executeCached(sql: """
                UPDATE installations SET opted_out = ?, opt_changed_at = ?
                WHERE profile_key = ? AND installation_id = ? AND opted_out != ?
                """, arguments: [optedOut, write.time, write.profileKey, installationID, optedOut])
        return db.changesCount > 0
    }

    // MARK: Moving between profiles

    /// The columns an installation carries when it moves, with how a move combines them with the receiving row's
    /// (whose values are newer: they were written after the identification that caused the move).
    static let movingColumns: [(name: String, combine: String)] = [
        ("project", "installations.project"),
        ("dev", "max(installations.dev, excluded.dev)"),
        ("install_date", "min(installations.install_date, excluded.install_date)"),
        ("last_visit_at", "max(installations.last_visit_at, excluded.last_visit_at)"),
        ("updated_at", "max(installations.updated_at, excluded.updated_at)"),
        ("last_push_at", "max(coalesce(installations.last_push_at, excluded.last_push_at), coalesce(excluded.last_push_at, installations.last_push_at))"),
        ("opted_out", "CASE WHEN coalesce(excluded.opt_changed_at, '') > coalesce(installations.opt_changed_at, '') THEN excluded.opted_out ELSE installations.opted_out END"),
        ("opt_changed_at", "max(coalesce(installations.opt_changed_at, excluded.opt_changed_at), coalesce(excluded.opt_changed_at, installations.opt_changed_at))"),
    ]
    + ["latitude", "longitude", "location_accuracy"].map {
        ($0, "CASE WHEN coalesce(excluded.location_at, '') > coalesce(installations.location_at, '') THEN excluded.\($0) ELSE installations.\($0) END")
    }
    + [("location_at", "max(coalesce(installations.location_at, excluded.location_at), coalesce(excluded.location_at, installations.location_at))")]
    + [
        "app", "token", "environment", "token_updated_at", "notification_permission", "geoip", "device_model_collection",
        "app_version", "app_build", "os_version", "sdk_version", "device_brand", "device_model", "detected_language",
        "detected_region", "timezone",
    ].map { ($0, "coalesce(installations.\($0), excluded.\($0))") }

    /// An installation row as JSON (for a move).
    static func json(_ row: Row) -> JSONValue {
        .object(
            movingColumns.map { column in
                let value: JSONValue =
                    switch row[column.name] as DatabaseValue? {
                    case .none: .null
                    case .some(let databaseValue):
                        switch databaseValue.storage {
                        case .null: .null
                        case .int64(let number): .number(String(number))
                        case .double(let number): .number(JSONValue.literal(number))
                        case .string(let text): .string(text)
                        case .blob: .null
                        }
                    }
                return JSONMember(column.name, value)
            })
    }

    /// Merges a moved installation's state into the row under `key`.
    static func receive(_ db: Database, key: String, project: String, installationID: String, state: [JSONMember]) throws {
        var values: [String: JSONValue] = [:]
        for member in state where member.value != .null { values[member.key] = member.value }
        // The NOT NULL columns, should the move carry nothing for them.
        let now = JSONValue.string(WireTime.format(Date()))
        for name in ["install_date", "last_visit_at", "updated_at"] where values[name] == nil { values[name] = now }
        values["project"] = .string(project)
        if values["dev"] == nil { values["dev"] = .number("0") }
        var arguments: [(any DatabaseValueConvertible)?] = [key, installationID]
        for column in movingColumns {
            switch values[column.name] {
            case .string(let text)?: arguments.append(text)
            case .number(let literal)?:
                arguments.append(Int64(literal).map { $0 as any DatabaseValueConvertible } ?? Double(literal))
            case .bool(let flag)?: arguments.append(flag)
            default: arguments.append(nil)
            }
        }
        let names = movingColumns.map(\.name)
        try db.executeCached(sql: """
                INSERT INTO installations (profile_key, installation_id, \(names.joined(separator: ", ")))
                VALUES (\(Array(repeating: "?", count: names.count + 2).joined(separator: ", ")))
                ON CONFLICT (profile_key, installation_id) DO UPDATE SET
                \(movingColumns.map { "\($0.name) = \($0.combine)" }.joined(separator: ",\n"))
                """, arguments: StatementArguments(arguments))
    }

    // MARK: Push tokens and their changelog

    /// Takes `token` from the installation if it still has it, and logs why; returns whether it had it.
    static func removeToken(
        _ db: Database, key: String, installationID: String, token: String, at: String, change: String, detail: String?
    ) throws -> Bool {
        try db.executeCached(
            sql: """
                UPDATE installations SET token = NULL, environment = NULL, token_updated_at = ?
                WHERE profile_key = ? AND installation_id = ? AND token = ?
                """, arguments: [at, key, installationID, token])
        guard db.changesCount > 0 else { return false }
        try log(db, key: key, installationID: installationID, at: at, change: change, token: token, detail: detail)
        return true
    }

    /// Entries of a profile's push changelog kept: the latest (docs/retention.md).
    static let changelogKept = 50

    /// Adds an entry to the profile's push changelog and drops what is beyond the latest `changelogKept`, through the
    /// `(profile_key, id)` index: the table holds at most that many rows per profile, whatever the traffic.
    static func log(
        _ db: Database, key: String, installationID: String, at: String, change: String, token: String?,
        detail: String? = nil
    ) throws {
        try db.executeCached(sql: """
                INSERT INTO push_changelog (profile_key, installation_id, at, change, token, detail)
                VALUES (?, ?, ?, ?, ?, ?)
                """, arguments: [key, installationID, at, change, token, detail])
        try db.executeCached(sql: """
                DELETE FROM push_changelog WHERE profile_key = ?1 AND id <= (
                    SELECT id FROM push_changelog WHERE profile_key = ?1 ORDER BY id DESC LIMIT 1 OFFSET ?2)
                """, arguments: [key, changelogKept])
    }
}

extension ApplyContext {
    /// A push token for the installation: the latest one replaces the previous; it is claimed for this profile at the
    /// token's key, which takes it from any other installation or profile that had it.
    mutating func pushToken() throws {
        let write = self.write
        guard let installationID = write.installationID, case .string(let token)? = write["push"]?["token"],
            case .string(let environment)? = write["push"]?["environment"]
        else { return }
        let key = write.profileKey
        let old = try Installations.row(db, key: key, installationID: installationID)
        guard old?["token"] as String? != token || old?["environment"] as String? != environment else { return }
        try db.executeCached(sql: """
                UPDATE installations SET token = ?, environment = ?, token_updated_at = ?
                WHERE profile_key = ? AND installation_id = ?
                """, arguments: [token, environment, write.time, key, installationID])
        contactsChanged(key)
        guard old?["token"] as String? != token else { return }
        try Installations.log(db, key: key, installationID: installationID, at: write.time, change: "registered", token: token)
        claim(token: token, key: key, registeredAt: write.time)
    }

    /// Asks the token's key to record this profile and installation as the token's owner.
    mutating func claim(token: String, key: String, registeredAt: String) {
        emit(
            .tokenClaim, suffix: "claim", key: ProfileKey.token(write.project, token),
            fields: [
                JSONMember("token", .string(token)), JSONMember("owner_key", .string(key)),
                JSONMember("registered_at", .string(registeredAt)),
            ])
    }

    /// At a token's key: the token now belongs to the claiming profile and installation. The previous owner, if
    /// another, releases it. A token registered on another installation later than this claim's registration wins:
    /// the claim is refused and the claimant releases the token instead. (The same installation claiming from another
    /// profile is the installation moving: its links decided where it is.)
    mutating func claimToken() throws {
        let write = self.write
        guard case .string(let token)? = write["token"], case .string(let owner)? = write["owner_key"],
            let installationID = write.installationID
        else { return }
        let registeredAt = write["registered_at"]?.stringValue ?? write.time
        let current = try Row.fetchOne(
            db.cachedStatement(
                sql: "SELECT profile_key, installation_id, since FROM token_owners WHERE project = ? AND token = ?"),
            arguments: [write.project, token])
        if let current, current["profile_key"] as String == owner, current["installation_id"] as String == installationID {
            return
        }
        if let current, current["installation_id"] as String != installationID, (current["since"] as String) > registeredAt {
            emit(
                .tokenRelease, suffix: "release", key: owner, installationID: installationID,
                fields: [
                    JSONMember("token", .string(token)), JSONMember("moved_to", .string(current["profile_key"] as String)),
                ])
            return
        }
        try db.executeCached(sql: """
                INSERT INTO token_owners (project, token, profile_key, installation_id, since) VALUES (?, ?, ?, ?, ?)
                ON CONFLICT (project, token) DO UPDATE SET profile_key = excluded.profile_key,
                    installation_id = excluded.installation_id, since = excluded.since
                """, arguments: [write.project, token, owner, installationID, registeredAt])
        if let current {
            emit(
                .tokenRelease, suffix: "release", key: current["profile_key"] as String,
                installationID: current["installation_id"] as String,
                fields: [JSONMember("token", .string(token)), JSONMember("moved_to", .string(owner))])
        }
    }

    /// At the token's previous owner: the installation that still has the token loses it; the move is recorded.
    mutating func releaseToken() throws {
        let write = self.write
        guard case .string(let token)? = write["token"], let installationID = write.installationID else { return }
        let key = write.record.keyString ?? ""
        let movedTo = write["moved_to"]?.stringValue
        if try Installations.removeToken(
            db, key: key, installationID: installationID, token: token, at: write.time, change: "moved_out",
            detail: movedTo.map { "to \($0)" })
        {
            contactsChanged(key)
        }
    }
}
