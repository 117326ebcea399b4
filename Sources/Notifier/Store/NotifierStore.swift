import Foundation
import CoreMetrics
import GRDB
import PartitionStore
import Shared

/// The notifier's per-partition state: the contacts of the partition's profiles, feedback learnt locally, the queue of
/// received sends, and the send ledger (one row per send and target: the dedupe and retry state).
enum NotifierStore {
    static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("notifier v1: contacts, feedback, sends, ledger") { db in
            try db.execute(
                sql: PartitionDatabase.coreTablesSQL + """
                    CREATE TABLE contacts (
                        profile_key TEXT PRIMARY KEY, project TEXT NOT NULL, phone_number TEXT, email TEXT,
                        snapshot BLOB NOT NULL, updated_at TEXT NOT NULL);
                    CREATE INDEX contacts_by_phone ON contacts (phone_number);
                    CREATE TABLE feedback (
                        profile_key TEXT NOT NULL, kind TEXT NOT NULL, value TEXT NOT NULL, at TEXT NOT NULL,
                        PRIMARY KEY (profile_key, kind, value)) WITHOUT ROWID;
                    CREATE TABLE sends (
                        send_id TEXT PRIMARY KEY, channel TEXT NOT NULL, profile_key TEXT NOT NULL, request BLOB NOT NULL,
                        state TEXT NOT NULL, received_at TEXT NOT NULL);
                    CREATE INDEX sends_queued ON sends (channel, state);
                    CREATE TABLE ledger (
                        send_id TEXT NOT NULL, target_id TEXT NOT NULL, channel TEXT NOT NULL, profile_key TEXT NOT NULL,
                        target TEXT NOT NULL, state TEXT NOT NULL, attempts INTEGER NOT NULL DEFAULT 0,
                        due_at TEXT NOT NULL, reason TEXT, provider_message_id TEXT, updated_at TEXT NOT NULL,
                        PRIMARY KEY (send_id, target_id)) WITHOUT ROWID;
                    CREATE INDEX ledger_due ON ledger (channel, state, due_at);
                    """)
        }
        InboxStore.migrate(&migrator)
        migrator.registerMigration("notifier v3: sends waiting for their contact") { db in
            // A send waiting for its contact (see `contactSettle`) is looked at again from this time on, and holds no
            // claim slot meanwhile.
            try db.execute(sql: "ALTER TABLE sends ADD COLUMN check_at TEXT")
        }
        migrator.registerMigration("notifier v4: waiting sends by profile") { db in
            // A profile's snapshot releases its waiting sends (`releaseWaiting`); resolved sends clear `check_at`.
            try db.execute(sql: """
                UPDATE sends SET check_at = NULL WHERE state != 'queued';
                CREATE INDEX sends_waiting ON sends (profile_key) WHERE check_at IS NOT NULL;
                """)
        }
        migrator.registerMigration("notifier v5: retention indexes") { db in
            try db.execute(sql: retentionIndexesSQL)
        }
        migrator.registerMigration("notifier v6: sends held until their time") { db in
            // A send decided ahead of its time (`not_before`) is `held` until then, then `queued` as if received then.
            try db.execute(sql: """
                ALTER TABLE sends ADD COLUMN not_before TEXT;
                CREATE INDEX sends_held ON sends (channel, not_before) WHERE state = 'held';
                """)
        }
        migrator.registerMigration("notifier v7: badge counts") { db in
            // The badge each installation shows, as the sends with a badge left it (`Badges`).
            try db.execute(sql: """
                CREATE TABLE installation_badges (
                    project TEXT NOT NULL, installation_id TEXT NOT NULL, count INTEGER NOT NULL, updated_at TEXT NOT NULL,
                    PRIMARY KEY (project, installation_id)) WITHOUT ROWID;
                """)
        }
        return migrator
    }

    /// Ledger states. `sending` is committed before the provider is called; a row found in it at start was in flight
    /// when the process stopped.
    enum State: String { case pending, sending, sent, failed, suppressed }

    // MARK: Consuming

    /// Applies one record of `herald.contacts`, `herald.sends.*` or `herald.deliveries`; returns dead letters for what
    /// cannot be read.
    static func apply(_ db: Database, record: KafkaRecord, now: Date) throws -> [PendingOutput] {
        let key = record.key.map { String(decoding: $0, as: UTF8.self) } ?? ""
        if record.topic == HeraldTopic.deliveries.name {
            try applyReport(db, record: record, now: now)
            return []
        }
        if record.topic == HeraldTopic.contacts.name {
            guard let value = record.value else {
                try db.execute(sql: "DELETE FROM contacts WHERE profile_key = ?", arguments: [key])
                try InboxStore.forget(db, key: key)
                try InboxStore.indexInstallations(db, key: key, contact: nil)
                return []
            }
            guard let contact = Contact.parse(value) else {
                return [deadLetter(record, reason: "not a contact snapshot", now: now)]
            }
            try InboxStore.indexInstallations(db, key: key, contact: contact)
            try releaseWaiting(db, key: key)
            try db.executeCached(sql: """
                    INSERT INTO contacts (profile_key, project, phone_number, email, snapshot, updated_at)
                    VALUES (?, ?, ?, ?, ?, ?)
                    ON CONFLICT (profile_key) DO UPDATE SET project = excluded.project,
                        phone_number = excluded.phone_number, email = excluded.email, snapshot = excluded.snapshot,
                        updated_at = excluded.updated_at
                    """, arguments: [key, contact.project, contact.sms.address, contact.email.address, Data(value), WireTime.format(now)])
            return []
        }
        guard let value = record.value else { return [deadLetter(record, reason: "a null value on a send topic", now: now)] }
        let send: SendRequest
        do {
            send = try Wire.decode(SendRequest.self, from: value)
        } catch {
            return [deadLetter(record, reason: error.description, now: now)]
        }
        guard HeraldTopic(rawValue: record.topic) == send.channel.topic else {
            return [deadLetter(record, reason: "a \(send.channel.rawValue) send on \(record.topic)", now: now)]
        }
        // A send id seen before (a replayed outbox, a redelivered batch) is not queued again. One decided ahead of its
        // time is held until then (`releaseHeld`).
        let held = send.notBefore.map { $0 > now } ?? false
        try db.executeCached(sql: """
                INSERT INTO sends (send_id, channel, profile_key, request, state, received_at, not_before) VALUES (?, ?, ?, ?, ?, ?, ?)
                ON CONFLICT (send_id) DO NOTHING
                """, arguments: [
                    send.sendID, send.channel.rawValue, send.profileKey, Data(value), held ? "held" : "queued", WireTime.format(now),
                    held ? send.notBefore.map(WireTime.format) : nil,
                ])
        if db.changesCount == 0 { NotifierMetrics.duplicateSends.increment() }
        return []
    }

    static func deadLetter(_ record: KafkaRecord, reason: String, now: Date) -> PendingOutput {
        .deadLetter(record, service: "notifier", reason: reason, at: now)
    }

    /// A delivery report read back: its target is finished, whichever instance finished it. Recorded in the ledger
    /// (a new row, or a row not finished here), so that a replayed send does not reach that target again. A row still
    /// `sending` here is finished too: its partition came back to this instance while an attempt was out, and that
    /// attempt's answer came while the partition was away (reported late, read back now); the row would otherwise stay
    /// `sending` until a restart made the attempt again. Reports that name no target of a send (a recipient's own
    /// unsubscribe) and unreadable ones are left to the orchestrator.
    static func applyReport(_ db: Database, record: KafkaRecord, now: Date) throws {
        guard let value = record.value, let report = try? Wire.decode(DeliveryReport.self, from: value),
            let sendID = report.sendID, let targetID = report.targetID ?? legacyTargetID(report, sendID: sendID)
        else { return }
        let channel = report.channel
        let state: State =
            switch report.outcome {
            case .sent: .sent
            case .suppressed: .suppressed
            default: .failed
            }
        let time = WireTime.format(now)
        try db.executeCached(sql: """
                INSERT INTO ledger (send_id, target_id, channel, profile_key, target, state, due_at, reason, updated_at)
                VALUES (?, ?, ?, ?, '{}', ?, ?, ?, ?)
                ON CONFLICT (send_id, target_id) DO UPDATE SET state = excluded.state, reason = excluded.reason,
                    updated_at = excluded.updated_at
                WHERE ledger.state IN ('pending', 'sending')
                """, arguments: [
                    sendID, targetID, channel.rawValue, report.profileKey ?? record.keyString ?? "", state.rawValue, time,
                    report.reason, time,
                ])
    }

    /// The target of a report written before `target_id` was a field: its id is `<send id>/<target id>/<outcome>`.
    static func legacyTargetID(_ report: DeliveryReport, sendID: String) -> String? {
        let prefix = sendID + "/"
        let suffix = "/" + report.outcome.rawValue
        guard report.id.hasPrefix(prefix), report.id.hasSuffix(suffix), report.id.count > prefix.count + suffix.count else { return nil }
        return String(report.id.dropFirst(prefix.count).dropLast(suffix.count))
    }

    // MARK: Contacts and feedback

    static func contact(_ db: Database, key: String) throws -> Contact? {
        guard let data = try Data.fetchOne(
            db.cachedStatement(sql: "SELECT snapshot FROM contacts WHERE profile_key = ?"), arguments: [key])
        else { return nil }
        return Contact.parse(Array(data))
    }

    static func feedback(_ db: Database, key: String) throws -> LocalFeedback {
        var feedback = LocalFeedback()
        for row in try Row.fetchAll(
            db.cachedStatement(sql: "SELECT kind, value, at FROM feedback WHERE profile_key = ?"), arguments: [key])
        {
            let value: String = row["value"]
            switch row["kind"] as String {
            case "token_invalid": feedback.invalidTokens.insert(value)
            case "email_bounced": feedback.bouncedAddresses.insert(value)
            case "email_marketing", "sms_marketing":
                let channel = (row["kind"] as String).hasPrefix("email") ? "email" : "sms"
                feedback.marketing[channel] = (value, WireTime.parse(row["at"]) ?? .distantPast)
            default: break
            }
        }
        return feedback
    }

    /// Records feedback: a dead token or address, or a marketing change (`email`/`sms`, `subscribed`/`unsubscribed`).
    static func recordFeedback(_ db: Database, key: String, kind: String, value: String, at: Date) throws {
        if kind.hasSuffix("_marketing") {
            try db.execute(sql: "DELETE FROM feedback WHERE profile_key = ? AND kind = ?", arguments: [key, kind])
        }
        try db.execute(
            sql: "INSERT OR REPLACE INTO feedback (profile_key, kind, value, at) VALUES (?, ?, ?, ?)",
            arguments: [key, kind, value, WireTime.format(at)])
    }

    /// The profile keys whose contact has this phone number (SMS replies).
    static func profiles(_ db: Database, phoneNumber: String) throws -> [String] {
        try String.fetchAll(db, sql: "SELECT profile_key FROM contacts WHERE phone_number = ?", arguments: [phoneNumber])
    }

    // MARK: Start

    /// Rows left in `sending` by a stop in the middle of an attempt: the provider may or may not have accepted them.
    /// They are attempted again (at least once: a send is never lost); returns how many.
    static func recoverInFlight(_ db: Database) throws -> Int {
        try db.execute(sql: "UPDATE ledger SET state = 'pending' WHERE state = 'sending'")
        return db.changesCount
    }
}
