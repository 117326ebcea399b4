import Foundation
import GRDB
import PartitionStore
import Shared

/// `contacts`: each profile's latest contact snapshot (`herald.contacts`), with its phone number and address for
/// lookups (SMS replies).
struct ContactsTable {
    let db: Database

    init(_ db: Database) { self.db = db }

    func contact(_ key: String) throws -> Contact? {
        guard let data = try Data.fetchOne(
            db.cachedStatement(sql: "SELECT snapshot FROM contacts WHERE profile_key = ?"), arguments: [key])
        else { return nil }
        if let known = Contact.recent.value(for: key, bytes: data) { return known }
        let bytes = Array(data)
        guard let contact = Contact.parse(bytes) else { return nil }
        Contact.recent.remember(contact, for: key, decodedFrom: bytes)
        return contact
    }

    /// Keeps a snapshot (`snapshot`: its record value, as read).
    func set(_ key: String, _ contact: Contact, snapshot: [UInt8], at time: Date) throws {
        try db.executeCached(sql: """
                INSERT INTO contacts (profile_key, project, phone_number, email, snapshot, updated_at)
                VALUES (?, ?, ?, ?, ?, ?)
                ON CONFLICT (profile_key) DO UPDATE SET project = excluded.project,
                    phone_number = excluded.phone_number, email = excluded.email, snapshot = excluded.snapshot,
                    updated_at = excluded.updated_at
                """, arguments: [key, contact.project, contact.sms.address, contact.email.address, Data(snapshot), WireTime.format(time)])
    }

    /// The profile is gone (a tombstone).
    func delete(_ key: String) throws {
        try db.execute(sql: "DELETE FROM contacts WHERE profile_key = ?", arguments: [key])
    }

    /// The profile keys whose contact has this phone number (SMS replies).
    func profiles(phoneNumber: String) throws -> [String] {
        try String.fetchAll(db, sql: "SELECT profile_key FROM contacts WHERE phone_number = ?", arguments: [phoneNumber])
    }

    /// Every snapshot (a migration that indexes them).
    func all() throws -> [(key: String, contact: Contact?)] {
        try Row.fetchAll(db, sql: "SELECT profile_key, snapshot FROM contacts").map {
            ($0["profile_key"], Contact.parse(Array($0["snapshot"] as Data)))
        }
    }
}
