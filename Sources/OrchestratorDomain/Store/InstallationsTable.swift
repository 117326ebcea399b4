import Foundation
import GRDB
import PartitionStore
import Shared

/// `installations`: an installation's row under the profile that holds it (its home's anonymous profile while it has
/// none): what the SDK reports, its push token, permission, opt-out and location, first and last seen.
struct InstallationsTable {
    let db: Database

    init(_ db: Database) { self.db = db }

    /// The `installation` op's string fields, stored in columns of the same names.
    static let fieldColumns: Set<String> = [
        "app_version", "app_build", "os_version", "sdk_version", "device_brand", "device_model", "detected_language",
        "detected_region", "timezone", "notification_permission",
    ]

    func record(_ key: String, _ installationID: String) throws -> InstallationRecord? {
        try storedRow(key, installationID).map(InstallationRecord.init(row:))
    }

    /// Whether the profile holds the installation.
    func holds(_ key: String, _ installationID: String) throws -> Bool {
        try Bool.fetchOne(
            db.cachedStatement(sql: "SELECT 1 FROM installations WHERE profile_key = ? AND installation_id = ?"),
            arguments: [key, installationID]) ?? false
    }

    /// Whether the installation is opted out; nil when the profile does not hold it.
    func optedOut(_ key: String, _ installationID: String) throws -> Bool? {
        try Bool.fetchOne(
            db.cachedStatement(sql: "SELECT opted_out FROM installations WHERE profile_key = ? AND installation_id = ?"),
            arguments: [key, installationID])
    }

    /// Returns whether the profile held it.
    func delete(_ key: String, _ installationID: String) throws -> Bool {
        try db.executeCached(
            sql: "DELETE FROM installations WHERE profile_key = ? AND installation_id = ?", arguments: [key, installationID])
        return db.changesCount > 0
    }

    /// Creates the row if needed; first seen is the install date, last seen the last visit.
    func touch(_ key: String, _ installationID: String, project: String, app: String?, dev: Bool, at time: Date) throws {
        let stamp = WireTime.format(time)
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
            arguments: [key, installationID, project, app, dev, stamp, stamp, stamp])
    }

    /// A data-collection flag (`geoip`, `device_model`). Turning device model collection off erases the stored model
    /// (batch-rules §9).
    func setDataCollection(_ key: String, _ installationID: String, flag: String, _ on: Bool) throws {
        let column = flag == "geoip" ? "geoip" : "device_model_collection"
        let erase = flag == "device_model" && !on ? ", device_model = NULL" : ""
        try db.executeCached(
            sql: "UPDATE installations SET \(column) = ?\(erase) WHERE profile_key = ? AND installation_id = ?",
            arguments: [on, key, installationID])
    }

    /// Sets one of `fieldColumns` (a device model only while the stored `device_model` flag is not false); returns
    /// whether the value changed.
    func setField(_ key: String, _ installationID: String, column: String, _ value: String?) throws -> Bool {
        guard Self.fieldColumns.contains(column) else { return false }
        let consent = column == "device_model" ? " AND (? IS NULL OR device_model_collection IS NOT 0)" : ""
        var arguments: StatementArguments = [value, key, installationID, value]
        if !consent.isEmpty { arguments += [value] }
        try db.executeCached(
            sql: """
                UPDATE installations SET \(column) = ?
                WHERE profile_key = ? AND installation_id = ? AND \(column) IS NOT ?\(consent)
                """, arguments: arguments)
        return db.changesCount > 0
    }

    /// When the installation's last kept location was taken.
    func locationTime(_ key: String, _ installationID: String) throws -> Date? {
        try Row.fetchOne(
            db.cachedStatement(sql: "SELECT location_at FROM installations WHERE profile_key = ? AND installation_id = ?"),
            arguments: [key, installationID]
        )?.time("location_at")
    }

    /// The profile's last known location: the most recently taken of its installations'.
    func lastLocation(_ key: String) throws -> InstallationRecord.Location? {
        let row = try Row.fetchOne(
            db.cachedStatement(sql: """
                SELECT latitude, longitude, location_accuracy, location_at FROM installations
                WHERE profile_key = ? AND location_at IS NOT NULL ORDER BY location_at DESC LIMIT 1
                """),
            arguments: [key])
        guard let row, let at = try row.time("location_at") else { return nil }
        return InstallationRecord.Location(latitude: row["latitude"], longitude: row["longitude"], accuracy: row["location_accuracy"], at: at)
    }

    func setLocation(
        _ key: String, _ installationID: String, latitude: Double, longitude: Double, accuracy: Double?, at time: Date
    ) throws {
        try db.executeCached(sql: """
                UPDATE installations SET latitude = ?, longitude = ?, location_accuracy = ?, location_at = ?
                WHERE profile_key = ? AND installation_id = ?
                """,
            arguments: [latitude, longitude, accuracy, WireTime.format(time), key, installationID])
    }

    /// Opt-out and opt-in; returns whether the state changed.
    func setOptedOut(_ key: String, _ installationID: String, _ optedOut: Bool, at time: Date) throws -> Bool {
        try db.executeCached(sql: """
                UPDATE installations SET opted_out = ?, opt_changed_at = ?
                WHERE profile_key = ? AND installation_id = ? AND opted_out != ?
                """, arguments: [optedOut, WireTime.format(time), key, installationID, optedOut])
        return db.changesCount > 0
    }

    // MARK: Push tokens

    func setToken(_ key: String, _ installationID: String, token: String, environment: PushEnvironment, at time: Date) throws {
        try db.executeCached(sql: """
                UPDATE installations SET token = ?, environment = ?, token_updated_at = ?
                WHERE profile_key = ? AND installation_id = ?
                """, arguments: [token, environment.rawValue, WireTime.format(time), key, installationID])
    }

    /// Takes `token` from the installation if it still has it; returns whether it had it.
    func removeToken(_ key: String, _ installationID: String, token: String, at time: Date) throws -> Bool {
        try db.executeCached(
            sql: """
                UPDATE installations SET token = NULL, environment = NULL, token_updated_at = ?
                WHERE profile_key = ? AND installation_id = ? AND token = ?
                """, arguments: [WireTime.format(time), key, installationID, token])
        return db.changesCount > 0
    }

    /// The profile's installations that have `token`.
    func holders(_ key: String, token: String) throws -> [String] {
        try String.fetchAll(
            db.cachedStatement(sql: "SELECT installation_id FROM installations WHERE profile_key = ? AND token = ?"),
            arguments: [key, token])
    }

    /// A push was sent to the installation at `time`.
    func markPushed(_ key: String, _ installationID: String, at time: Date) throws {
        let stamp = WireTime.format(time)
        try db.executeCached(sql: """
                UPDATE installations SET last_push_at = max(coalesce(last_push_at, ?), ?)
                WHERE profile_key = ? AND installation_id = ?
                """, arguments: [stamp, stamp, key, installationID])
    }

    // MARK: Sessions

    /// The installation's session in progress and its latest start.
    func sessionState(_ key: String, _ installationID: String) throws -> (openID: String?, openAt: Date?, lastAt: Date?)? {
        guard let row = try Row.fetchOne(
            db.cachedStatement(
                sql: "SELECT open_session_id, open_session_at, last_session_at FROM installations WHERE profile_key = ? AND installation_id = ?"),
            arguments: [key, installationID])
        else { return nil }
        return (row["open_session_id"], try row.time("open_session_at"), try row.time("last_session_at"))
    }

    /// Counts a session started at `time`; `open`: it is the installation's newest, now in progress (the one before,
    /// if it never reported its end, is closed without a length).
    func sessionStarted(_ key: String, _ installationID: String, sessionID: String, at time: Date, open: Bool) throws {
        try db.executeCached(sql: """
                UPDATE installations SET session_count = session_count + 1,
                    first_session_at = min(coalesce(first_session_at, ?1), ?1),
                    last_session_at = max(coalesce(last_session_at, ?1), ?1),
                    open_session_id = CASE WHEN ?2 THEN ?3 ELSE open_session_id END,
                    open_session_at = CASE WHEN ?2 THEN ?1 ELSE open_session_at END
                WHERE profile_key = ?4 AND installation_id = ?5
                """, arguments: [WireTime.format(time), open, sessionID, key, installationID])
    }

    /// Adds a session's length; `close`: it was the session in progress.
    func sessionEnded(_ key: String, _ installationID: String, seconds: Double, close: Bool) throws {
        try db.executeCached(sql: """
                UPDATE installations SET session_seconds = session_seconds + ?1,
                    open_session_id = CASE WHEN ?2 THEN NULL ELSE open_session_id END,
                    open_session_at = CASE WHEN ?2 THEN NULL ELSE open_session_at END
                WHERE profile_key = ?3 AND installation_id = ?4
                """, arguments: [seconds, close, key, installationID])
    }

    // MARK: A profile's installations

    /// How many installations the profile holds.
    func count(_ key: String) throws -> Int {
        try Int.fetchOne(db.cachedStatement(sql: "SELECT count(*) FROM installations WHERE profile_key = ?"), arguments: [key]) ?? 0
    }

    /// The profile's installation ids, in order.
    func ids(_ key: String) throws -> [String] {
        try String.fetchAll(
            db.cachedStatement(sql: "SELECT installation_id FROM installations WHERE profile_key = ? ORDER BY installation_id"),
            arguments: [key])
    }

    /// The profile's installations, in id order.
    func all(_ key: String) throws -> [InstallationRecord] {
        try InstallationRecord.fetchAll(
            db.cachedStatement(sql: "SELECT * FROM installations WHERE profile_key = ? ORDER BY installation_id"),
            arguments: [key])
    }

    /// The profile's installations, most recently seen first (their detected values stand in for the profile's).
    func allRecentFirst(_ key: String) throws -> [InstallationRecord] {
        try InstallationRecord.fetchAll(
            db.cachedStatement(
                sql: "SELECT * FROM installations WHERE profile_key = ? ORDER BY last_visit_at DESC, installation_id"),
            arguments: [key])
    }

    /// The columns segments read (natives and push reachability), most recently seen first.
    func segmentFacts(_ key: String) throws -> [InstallationRecord.SegmentFacts] {
        try InstallationRecord.SegmentFacts.fetchAll(
            db.cachedStatement(
                sql: """
                    SELECT token, opted_out, notification_permission, detected_language, detected_region, timezone,
                        install_date, last_visit_at, last_push_at, app_version, app_build, os_version, sdk_version,
                        device_brand, device_model, session_count, session_seconds, first_session_at, last_session_at
                    FROM installations WHERE profile_key = ? ORDER BY last_visit_at DESC, installation_id
                    """),
            arguments: [key])
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
    // Sessions counted on either side add up (the home's before the identification, the profile's after); the session
    // in progress is the later-started one.
    + [
        ("session_count", "installations.session_count + excluded.session_count"),
        ("session_seconds", "installations.session_seconds + excluded.session_seconds"),
        ("first_session_at", "min(coalesce(installations.first_session_at, excluded.first_session_at), coalesce(excluded.first_session_at, installations.first_session_at))"),
        ("last_session_at", "max(coalesce(installations.last_session_at, excluded.last_session_at), coalesce(excluded.last_session_at, installations.last_session_at))"),
    ]
    + ["open_session_id", "open_session_at"].map {
        ($0, "CASE WHEN coalesce(excluded.open_session_at, '') > coalesce(installations.open_session_at, '') THEN excluded.\($0) ELSE installations.\($0) END")
    }
    + [
        "app", "token", "environment", "token_updated_at", "notification_permission", "geoip", "device_model_collection",
        "app_version", "app_build", "os_version", "sdk_version", "device_brand", "device_model", "detected_language",
        "detected_region", "timezone",
    ].map { ($0, "coalesce(installations.\($0), excluded.\($0))") }

    /// The installation's moving state (for a move): its moving columns, by name, as stored; nil when the profile does
    /// not hold it.
    func movingState(_ key: String, _ installationID: String) throws -> [JSONMember]? {
        try storedRow(key, installationID).map(Self.state)
    }

    /// The installation and its moving state, from one read (it leaves the profile); nil when the profile does not hold it.
    func leaving(_ key: String, _ installationID: String) throws -> (installation: InstallationRecord, state: [JSONMember])? {
        guard let row = try storedRow(key, installationID) else { return nil }
        return (try InstallationRecord(row: row), Self.state(row))
    }

    private func storedRow(_ key: String, _ installationID: String) throws -> Row? {
        try Row.fetchOne(
            db.cachedStatement(sql: "SELECT * FROM installations WHERE profile_key = ? AND installation_id = ?"),
            arguments: [key, installationID])
    }

    private static func state(_ row: Row) -> [JSONMember] {
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
        }
    }

    /// Merges a moved installation's state into the row under `key`.
    func receive(_ key: String, project: String, installationID: String, state: [JSONMember]) throws {
        var values: [String: JSONValue] = [:]
        for member in state where member.value != .null { values[member.key] = member.value }
        // The NOT NULL columns, should the move carry nothing for them.
        let now = JSONValue.string(WireTime.format(Date()))
        for name in ["install_date", "last_visit_at", "updated_at"] where values[name] == nil { values[name] = now }
        for name in ["session_count", "session_seconds"] where values[name] == nil { values[name] = .number("0") }
        values["project"] = .string(project)
        if values["dev"] == nil { values["dev"] = .number("0") }
        var arguments: [(any DatabaseValueConvertible)?] = [key, installationID]
        for column in Self.movingColumns {
            switch values[column.name] {
            case .string(let text)?: arguments.append(text)
            case .number(let literal)?:
                arguments.append(Int64(literal).map { $0 as any DatabaseValueConvertible } ?? Double(literal))
            case .bool(let flag)?: arguments.append(flag)
            default: arguments.append(nil)
            }
        }
        let names = Self.movingColumns.map(\.name)
        try db.executeCached(sql: """
                INSERT INTO installations (profile_key, installation_id, \(names.joined(separator: ", ")))
                VALUES (\(Array(repeating: "?", count: names.count + 2).joined(separator: ", ")))
                ON CONFLICT (profile_key, installation_id) DO UPDATE SET
                \(Self.movingColumns.map { "\($0.name) = \($0.combine)" }.joined(separator: ",\n"))
                """, arguments: StatementArguments(arguments))
    }
}
