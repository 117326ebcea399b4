import Foundation
import GRDB
import PartitionStore
import Shared

/// The notifier's partition database: the generic store's tables, then contacts, feedback, the sends received, the
/// ledger, the inbox and the badge counts. Each table's SQL is in its own file of this folder (`SendsTable`,
/// `LedgerTable`, …). Named, append-only migrations (never renamed: a database records the names it ran); their SQL is
/// as it ran, states included.
enum NotifierSchema {
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
        migrator.registerMigration("notifier v2: inbox") { db in
            try db.execute(sql: """
                CREATE TABLE inbox (
                    project TEXT NOT NULL, app TEXT NOT NULL, owner_kind TEXT NOT NULL, owner_id TEXT NOT NULL,
                    notification_id TEXT NOT NULL, send_id TEXT NOT NULL, installation_id TEXT, custom_id TEXT,
                    sent_at INTEGER NOT NULL, source TEXT NOT NULL, title TEXT, body TEXT, attachment_url TEXT,
                    silent INTEGER NOT NULL, payload BLOB NOT NULL,
                    read INTEGER NOT NULL DEFAULT 0, opened INTEGER NOT NULL DEFAULT 0, deleted INTEGER NOT NULL DEFAULT 0,
                    PRIMARY KEY (project, app, owner_kind, owner_id, notification_id)) WITHOUT ROWID;
                CREATE INDEX inbox_newest ON inbox (project, app, owner_kind, owner_id, sent_at, notification_id);
                CREATE INDEX inbox_age ON inbox (sent_at);
                CREATE TABLE installations (
                    project TEXT NOT NULL, installation_id TEXT NOT NULL, profile_key TEXT NOT NULL, opted_out INTEGER NOT NULL,
                    PRIMARY KEY (project, installation_id, profile_key)) WITHOUT ROWID;
                CREATE INDEX installations_by_profile ON installations (profile_key);
                """)
            let installations = InboxInstallationsTable(db, named: "installations")
            for (key, contact) in try ContactsTable(db).all() { try installations.index(key, contact: contact) }
        }
        migrator.registerMigration("notifier v3: sends waiting for their contact") { db in
            // A send waiting for its contact (see `SendClaims.contactSettle`) is looked at again from this time on, and
            // holds no claim slot meanwhile.
            try db.execute(sql: "ALTER TABLE sends ADD COLUMN check_at TEXT")
        }
        migrator.registerMigration("notifier v4: waiting sends by profile") { db in
            // A profile's snapshot releases its waiting sends (`SendsTable.releaseWaiting`); resolved sends clear
            // `check_at`.
            try db.execute(sql: """
                UPDATE sends SET check_at = NULL WHERE state != 'queued';
                CREATE INDEX sends_waiting ON sends (profile_key) WHERE check_at IS NOT NULL;
                """)
        }
        migrator.registerMigration("notifier v5: retention indexes") { db in
            // Where the retention rounds prune (`LedgerTable.pruneFinished`, `SendsTable.pruneResolved`).
            try db.execute(sql: """
                CREATE INDEX ledger_finished ON ledger (updated_at) WHERE state IN ('sent', 'failed', 'suppressed');
                CREATE INDEX sends_resolved ON sends (received_at) WHERE state = 'resolved';
                """)
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
        migrator.registerMigration("notifier v8: the send of an inbox notification") { db in
            // Whose send it was, of which campaign and experiment arm: its first `opened` mark is reported on
            // `herald.deliveries` (`InboxTable.opening`).
            try db.execute(sql: """
                ALTER TABLE inbox ADD COLUMN profile_key TEXT;
                ALTER TABLE inbox ADD COLUMN campaign TEXT;
                ALTER TABLE inbox ADD COLUMN experiment TEXT;
                ALTER TABLE inbox ADD COLUMN variant TEXT;
                """)
        }
        migrator.registerMigration("notifier v9: the inbox's installations named for the inbox") { db in
            // The orchestrator's `installations` holds the installations themselves; this one only which profile holds
            // each, for the inbox. Renamed in the changelog too (`ChangelogCapture.renameTable`, and `renamedTables`
            // for a changelog written before).
            try ChangelogCapture.renameTable(db, from: "installations", to: InboxInstallationsTable.name)
            try db.execute(sql: """
                DROP INDEX installations_by_profile;
                CREATE INDEX inbox_installations_by_profile ON inbox_installations (profile_key);
                """)
        }
        migrator.registerMigration("notifier v10: one person's rows found through an index") { db in
            // An erasure and an export read one person's rows in every table with a profile_key, and find them by the
            // contact's address or number: each through an index, whatever the partition holds of everyone else
            // (ProfileReadPlanTests). A send's and its ledger's rows are written once and deleted once by profile.
            try db.execute(sql: """
                CREATE INDEX sends_by_profile ON sends (profile_key);
                CREATE INDEX ledger_by_profile ON ledger (profile_key);
                CREATE INDEX inbox_by_profile ON inbox (profile_key);
                CREATE INDEX contacts_by_email ON contacts (project, lower(email));
                """)
        }
        return migrator
    }

    /// Tables a migration renamed, old name → new, for a restore of a changelog written before
    /// (`ChangelogSettings.renamedTables`).
    static let renamedTables = ["installations": InboxInstallationsTable.name]
}
