import Foundation
import GRDB
import PartitionStore
import Shared

/// A profile's native field kept in a column of the same name (`ProfileEdit.natives`' wire names).
enum ProfileNative: String, CaseIterable {
    case email
    case emailMarketing = "email_marketing"
    case phoneNumber = "phone_number"
    case smsMarketing = "sms_marketing"
    case language, region, timezone

    var isMarketingState: Bool { self == .emailMarketing || self == .smsMarketing }
    /// Whether it changes how the profile can be reached (its contact snapshot).
    var isReachability: Bool { self == .email || self == .emailMarketing || self == .phoneNumber || self == .smsMarketing }
}

/// `profiles`: one row per profile (custom ID, alias-only or anonymous): its channels (email and SMS with their
/// marketing states), its own language, region and time zone, the revision of its last contact snapshot. Rows keyed by
/// the profile in other tables go with it (`ON DELETE CASCADE`).
struct ProfilesTable {
    let db: Database

    init(_ db: Database) { self.db = db }


    func exists(_ key: String) throws -> Bool {
        try Bool.fetchOne(db.cachedStatement(sql: "SELECT 1 FROM profiles WHERE profile_key = ?"), arguments: [key]) ?? false
    }

    func record(_ key: String) throws -> ProfileRecord? {
        try ProfileRecord.fetchOne(db.cachedStatement(sql: "SELECT * FROM profiles WHERE profile_key = ?"), arguments: [key])
    }

    /// Creates the row, or moves its `updated_at`; returns whether its `created_at` is `time` (it may be new).
    func ensure(_ key: String, project: String, customID: String?, at time: Date) throws -> Bool {
        let text = WireTime.format(time)
        return try String.fetchOne(
            db.cachedStatement(
                sql: """
                    INSERT INTO profiles (profile_key, project, custom_id, created_at, updated_at) VALUES (?, ?, ?, ?, ?)
                    ON CONFLICT (profile_key) DO UPDATE SET updated_at = max(updated_at, excluded.updated_at)
                    RETURNING created_at
                    """), arguments: [key, project, customID, text, text]) == text
    }

    /// Deletes the row (and, by cascade, the rows keyed by it); returns whether there was one.
    func delete(_ key: String) throws -> Bool {
        try db.executeCached(sql: "DELETE FROM profiles WHERE profile_key = ?", arguments: [key])
        return db.changesCount > 0
    }

    /// A native field's value.
    func native(_ key: String, _ native: ProfileNative) throws -> String? {
        try String.fetchOne(
            db.cachedStatement(sql: "SELECT \(native.rawValue) FROM profiles WHERE profile_key = ?"), arguments: [key])
    }

    /// Sets a native field: a marketing state with the time it changed, a new address not bounced (yet).
    func setNative(_ key: String, _ native: ProfileNative, _ value: String?, at time: Date) throws {
        let column = native.rawValue
        var sql = "UPDATE profiles SET \(column) = ?"
        if native.isMarketingState { sql += ", \(column)_changed_at = ?" }
        if native == .email { sql += ", email_bounced_at = NULL" }
        sql += " WHERE profile_key = ?"
        let arguments: StatementArguments = native.isMarketingState ? [value, WireTime.format(time), key] : [value, key]
        try db.executeCached(sql: sql, arguments: arguments)
    }

    /// Sets a native field only where the profile has none (a merge).
    func fillNative(_ key: String, _ native: ProfileNative, _ value: String?) throws {
        let column = native.rawValue
        try db.executeCached(
            sql: "UPDATE profiles SET \(column) = coalesce(\(column), ?) WHERE profile_key = ?", arguments: [value, key])
    }

    /// The email address bounced (only `address`, when given: a newer one set since is still good); returns whether it
    /// changed anything.
    func markEmailBounced(_ key: String, address: String?, at time: Date) throws -> Bool {
        try db.executeCached(
            sql: """
                UPDATE profiles SET email_bounced_at = ?
                WHERE profile_key = ? AND email IS NOT NULL AND (? IS NULL OR email = ?)
                """, arguments: [WireTime.format(time), key, address, address])
        return db.changesCount > 0
    }

    /// A recipient's own marketing change (`email` or `sms`); returns whether it changed the state.
    func setMarketing(_ key: String, channel: MessageChannel, subscribed: Bool, at time: Date) throws -> Bool {
        let column = channel == .email ? "email_marketing" : "sms_marketing"
        let state = subscribed ? "subscribed" : "unsubscribed"
        try db.executeCached(
            sql: """
                UPDATE profiles SET \(column) = ?, \(column)_changed_at = ?
                WHERE profile_key = ? AND coalesce(\(column), '') != ?
                """, arguments: [state, WireTime.format(time), key, state])
        return db.changesCount > 0
    }

    func contactRevision(_ key: String) throws -> Int? {
        try Int.fetchOne(db.cachedStatement(sql: "SELECT contact_revision FROM profiles WHERE profile_key = ?"), arguments: [key])
    }

    /// Moves the profile to its next contact revision; returns the row (nil: no such profile).
    func nextContactRevision(_ key: String) throws -> ProfileRecord? {
        try ProfileRecord.fetchOne(
            db.cachedStatement(sql: "UPDATE profiles SET contact_revision = contact_revision + 1 WHERE profile_key = ? RETURNING *"),
            arguments: [key])
    }

    /// Up to `limit` profiles of `project` after `after`, in key order (a backfill's scan).
    func page(project: String, after: String?, limit: Int) throws -> [ProfileRecord] {
        try ProfileRecord.fetchAll(
            db.cachedStatement(sql: "SELECT * FROM profiles WHERE profile_key > ? AND profile_key < ? ORDER BY profile_key LIMIT ?"),
            arguments: [after ?? "\(project)/", "\(project)0", limit])
    }
}
