import Foundation
import GRDB
import PartitionStore
import Shared

/// The orchestrator's partition database: the generic store's tables, then profiles, identity, segments and campaigns.
/// Each table's SQL is in its own file of this folder (`ProfilesTable`, `TimersTable`, …).
package enum OrchestratorSchema {
    /// Whose rows the tables hold: a profile's (`profile_key`), or for an installation's link its home profile's. A
    /// read cached for a profile (an in-app sync's tag) is dropped when any of them changes.
    package static let rowOwners = RowOwners(column: "profile_key", expressions: ["installation_links": InstallationLinksTable.ownerKey])

    /// Named, append-only migrations (never renamed: a database records the names it ran).
    package static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1: offsets, dedupe, outbox, profiles, events") { db in
            try db.execute(
                sql: PartitionDatabase.coreTablesSQL + RecordDedupe.tableSQL + """
                    CREATE TABLE deferred_records (
                        topic TEXT NOT NULL, offset INTEGER NOT NULL, key TEXT, value BLOB, op TEXT,
                        PRIMARY KEY (topic, offset));
                    CREATE TABLE profiles (
                        profile_key TEXT PRIMARY KEY, project TEXT NOT NULL, custom_id TEXT,
                        email TEXT, email_marketing TEXT, email_marketing_changed_at TEXT,
                        phone_number TEXT, sms_marketing TEXT, sms_marketing_changed_at TEXT,
                        language TEXT, region TEXT, timezone TEXT,
                        created_at TEXT NOT NULL, updated_at TEXT NOT NULL);
                    CREATE TABLE profile_attributes (
                        profile_key TEXT NOT NULL REFERENCES profiles(profile_key) ON DELETE CASCADE,
                        name TEXT NOT NULL, type TEXT NOT NULL, value TEXT NOT NULL, updated_at TEXT NOT NULL,
                        PRIMARY KEY (profile_key, name)) WITHOUT ROWID;
                    CREATE TABLE event_aggregates (
                        profile_key TEXT NOT NULL REFERENCES profiles(profile_key) ON DELETE CASCADE,
                        name TEXT NOT NULL, count INTEGER NOT NULL, first_at TEXT NOT NULL, last_at TEXT NOT NULL,
                        last_label TEXT, last_tags TEXT, last_attributes TEXT NOT NULL,
                        PRIMARY KEY (profile_key, name)) WITHOUT ROWID;
                    """)
        }
        migrator.registerMigration("v2: installations, identity links, token owners, push changelog") { db in
            try db.execute(
                sql: """
                    CREATE TABLE installations (
                        profile_key TEXT NOT NULL REFERENCES profiles(profile_key) ON DELETE CASCADE,
                        installation_id TEXT NOT NULL, project TEXT NOT NULL, app TEXT, dev INTEGER NOT NULL DEFAULT 0,
                        token TEXT, environment TEXT, token_updated_at TEXT, notification_permission TEXT,
                        opted_out INTEGER NOT NULL DEFAULT 0, opt_changed_at TEXT,
                        geoip INTEGER, device_model_collection INTEGER,
                        app_version TEXT, app_build TEXT, os_version TEXT, sdk_version TEXT, device_brand TEXT,
                        device_model TEXT, detected_language TEXT, detected_region TEXT, timezone TEXT,
                        latitude REAL, longitude REAL, location_accuracy REAL, location_at TEXT,
                        install_date TEXT NOT NULL, last_visit_at TEXT NOT NULL, last_push_at TEXT,
                        updated_at TEXT NOT NULL,
                        PRIMARY KEY (profile_key, installation_id)) WITHOUT ROWID;
                    CREATE TABLE installation_links (
                        project TEXT NOT NULL, installation_id TEXT NOT NULL, custom_id TEXT, linked_at TEXT NOT NULL,
                        PRIMARY KEY (project, installation_id)) WITHOUT ROWID;
                    CREATE TABLE token_owners (
                        project TEXT NOT NULL, token TEXT NOT NULL, profile_key TEXT NOT NULL,
                        installation_id TEXT NOT NULL, since TEXT NOT NULL,
                        PRIMARY KEY (project, token)) WITHOUT ROWID;
                    CREATE TABLE push_changelog (
                        id INTEGER PRIMARY KEY AUTOINCREMENT,
                        profile_key TEXT NOT NULL REFERENCES profiles(profile_key) ON DELETE CASCADE,
                        installation_id TEXT NOT NULL, at TEXT NOT NULL, change TEXT NOT NULL, token TEXT,
                        detail TEXT);
                    CREATE INDEX push_changelog_by_profile ON push_changelog (profile_key, id);
                    ALTER TABLE profiles ADD COLUMN email_bounced_at TEXT;
                    """)
        }
        migrator.registerMigration("v3: segment membership, timers, campaign history") { db in
            try db.execute(
                sql: """
                    CREATE TABLE segment_members (
                        segment_key TEXT NOT NULL, profile_key TEXT NOT NULL, since TEXT NOT NULL,
                        PRIMARY KEY (segment_key, profile_key)) WITHOUT ROWID;
                    CREATE INDEX segment_members_by_profile ON segment_members (profile_key);
                    CREATE TABLE segment_state (
                        segment_key TEXT PRIMARY KEY, condition TEXT NOT NULL, backfilled_at TEXT NOT NULL);
                    CREATE TABLE timers (
                        profile_key TEXT NOT NULL, kind TEXT NOT NULL, ref TEXT NOT NULL, due_at TEXT NOT NULL,
                        payload TEXT, PRIMARY KEY (profile_key, kind, ref)) WITHOUT ROWID;
                    CREATE INDEX timers_by_due ON timers (due_at);
                    CREATE TABLE campaign_history (
                        campaign_key TEXT NOT NULL, profile_key TEXT NOT NULL, occurrence TEXT NOT NULL, at TEXT NOT NULL,
                        PRIMARY KEY (campaign_key, profile_key, occurrence)) WITHOUT ROWID;
                    CREATE TABLE campaign_state (
                        campaign_key TEXT PRIMARY KEY, last_occurrence TEXT NOT NULL);
                    """)
        }
        migrator.registerMigration("v4: contact revisions") { db in
            // The revision of the profile's last contact snapshot, named by the sends decided after it.
            try db.execute(sql: "ALTER TABLE profiles ADD COLUMN contact_revision INTEGER NOT NULL DEFAULT 0")
        }
        migrator.registerMigration("v5: retention indexes") { db in
            // Where the retention rounds prune (docs/retention.md): record ids by age, campaign decisions by age.
            try db.execute(sql: RecordDedupe.indexSQL + """
                CREATE INDEX campaign_history_by_time ON campaign_history (campaign_key, at);
                CREATE INDEX campaign_history_by_profile ON campaign_history (profile_key);
                """)
        }
        migrator.registerMigration("v6: frequency log") { db in
            // The marketing messages decided for a profile, for frequency caps (docs/campaigns.md): `decided` until
            // the notifier reports the send made (`sent`) or not made (`released`: the slot is free again).
            try db.execute(sql: """
                CREATE TABLE frequency_log (
                    profile_key TEXT NOT NULL, send_id TEXT NOT NULL, channel TEXT NOT NULL, at TEXT NOT NULL,
                    state TEXT NOT NULL, PRIMARY KEY (profile_key, send_id)) WITHOUT ROWID;
                CREATE INDEX frequency_log_by_time ON frequency_log (at);
                """)
        }
        migrator.registerMigration("v7: local-time sends") { db in
            // The members of a local-time schedule's run, by the instant their local time comes (docs/campaigns.md):
            // a row per prepared page and instant, named by its first member, holding the members still to release
            // (a JSON array of profile keys, in key order); one timer per distinct instant releases its rows, each
            // shortened or deleted as its members are decided.
            try db.execute(sql: """
                CREATE TABLE local_sends (
                    campaign_key TEXT NOT NULL, due_at TEXT NOT NULL, first_key TEXT NOT NULL, occurrence TEXT NOT NULL,
                    profile_keys TEXT NOT NULL,
                    PRIMARY KEY (campaign_key, due_at, first_key)) WITHOUT ROWID;
                """)
        }
        migrator.registerMigration("v8: campaign send pace") { db in
            // When a rate-limited campaign's next page of recipients may be decided in this partition
            // (docs/campaigns.md, "Send rate limits"): shared by all its runs, so that together they keep the rate.
            try db.execute(sql: "CREATE TABLE campaign_pace (campaign_key TEXT PRIMARY KEY, next_at TEXT NOT NULL) WITHOUT ROWID")
        }
        migrator.registerMigration("v9: purchases, aliases") { db in
            // Purchases per product (docs/orchestrator.md); a profile's Braze aliases (one name per label), and at an
            // alias's home the profile it belongs to (the first claim wins).
            try db.execute(sql: """
                CREATE TABLE purchase_aggregates (
                    profile_key TEXT NOT NULL REFERENCES profiles(profile_key) ON DELETE CASCADE,
                    product_id TEXT NOT NULL, count INTEGER NOT NULL, revenue_usd REAL NOT NULL,
                    unpriced_count INTEGER NOT NULL, first_at TEXT NOT NULL, last_at TEXT NOT NULL, last_price REAL NOT NULL,
                    last_currency TEXT NOT NULL,
                    PRIMARY KEY (profile_key, product_id)) WITHOUT ROWID;
                CREATE TABLE profile_aliases (
                    profile_key TEXT NOT NULL REFERENCES profiles(profile_key) ON DELETE CASCADE,
                    label TEXT NOT NULL, name TEXT NOT NULL, since TEXT NOT NULL,
                    PRIMARY KEY (profile_key, label)) WITHOUT ROWID;
                CREATE TABLE alias_links (
                    project TEXT NOT NULL, label TEXT NOT NULL, name TEXT NOT NULL, custom_id TEXT NOT NULL,
                    linked_at TEXT NOT NULL,
                    PRIMARY KEY (project, label, name)) WITHOUT ROWID;
                """)
        }
        migrator.registerMigration("v10: segment backfills in progress") { db in
            // A segment being backfilled in this partition and how far (docs/campaigns.md, "Backfill"): the profiles
            // up to `after` have been evaluated; the others are not known yet. Removed when the backfill is done
            // (`segment_state` then holds the condition).
            try db.execute(sql: """
                CREATE TABLE segment_backfills (
                    segment_key TEXT PRIMARY KEY, condition TEXT NOT NULL, after TEXT) WITHOUT ROWID;
                """)
        }
        migrator.registerMigration("v11: held sends") { db in
            // The sends held by quiet hours, counted for `herald_quiet_window_held` (docs/operability.md): a partial
            // index, which the other timers' writes do not pay for.
            try db.execute(sql: "CREATE INDEX timers_held ON timers (due_at) WHERE kind = 'quiet'")
        }
        migrator.registerMigration("v12: app sessions, push receipts") { db in
            // Sessions per installation, counted from what the app reports (AppSessions); the pushes delivered to
            // each installation, which an app's open of a notification is checked against (PushOpens).
            try db.execute(sql: """
                ALTER TABLE installations ADD COLUMN session_count INTEGER NOT NULL DEFAULT 0;
                ALTER TABLE installations ADD COLUMN session_seconds REAL NOT NULL DEFAULT 0;
                ALTER TABLE installations ADD COLUMN first_session_at TEXT;
                ALTER TABLE installations ADD COLUMN last_session_at TEXT;
                ALTER TABLE installations ADD COLUMN open_session_id TEXT;
                ALTER TABLE installations ADD COLUMN open_session_at TEXT;
                CREATE TABLE push_receipts (
                    profile_key TEXT NOT NULL REFERENCES profiles(profile_key) ON DELETE CASCADE,
                    send_id TEXT NOT NULL, installation_id TEXT NOT NULL, campaign_key TEXT, sent_at TEXT NOT NULL,
                    PRIMARY KEY (profile_key, send_id, installation_id)) WITHOUT ROWID;
                CREATE INDEX push_receipts_by_time ON push_receipts (sent_at);
                """)
        }
        migrator.registerMigration("v13: in-app impressions") { db in
            // Each in-app message shown to a profile, on any of its devices: re-eligibility counts them (InAppReports).
            try db.execute(sql: """
                CREATE TABLE in_app_impressions (
                    profile_key TEXT NOT NULL REFERENCES profiles(profile_key) ON DELETE CASCADE,
                    message_key TEXT NOT NULL, at TEXT NOT NULL, installation_id TEXT NOT NULL,
                    PRIMARY KEY (profile_key, message_key, at, installation_id)) WITHOUT ROWID;
                CREATE INDEX in_app_impressions_by_time ON in_app_impressions (message_key, at);
                """)
        }
        migrator.registerMigration("v14: push opens once") { db in
            // The first open and the first button press of each push delivered to an installation: what counts.
            try db.execute(sql: """
                ALTER TABLE push_receipts ADD COLUMN opened_at TEXT;
                ALTER TABLE push_receipts ADD COLUMN clicked_at TEXT;
                """)
        }
        migrator.registerMigration("v15: content cards") { db in
            // Each profile's feed of content cards (ContentCardsTable): a row per card delivered, kept 30 days past its
            // expiry as the card's "received" record; `seq` orders the feed's changes for the apps' cursor syncs.
            try db.execute(sql: """
                CREATE TABLE content_cards (
                    profile_key TEXT NOT NULL REFERENCES profiles(profile_key) ON DELETE CASCADE,
                    card_id TEXT NOT NULL, card_key TEXT NOT NULL, campaign_key TEXT NOT NULL, seq INTEGER NOT NULL,
                    language TEXT NOT NULL, texts TEXT NOT NULL, content TEXT NOT NULL, context TEXT NOT NULL,
                    created_at TEXT NOT NULL, updated_at TEXT NOT NULL, expires_at TEXT NOT NULL,
                    viewed_at TEXT, clicked_at TEXT, dismissed_at TEXT,
                    PRIMARY KEY (profile_key, card_id)) WITHOUT ROWID;
                CREATE INDEX content_cards_by_seq ON content_cards (profile_key, seq);
                CREATE INDEX content_cards_by_expiry ON content_cards (expires_at);
                CREATE TABLE content_card_sequence (id INTEGER PRIMARY KEY CHECK (id = 0), seq INTEGER NOT NULL);
                INSERT INTO content_card_sequence (id, seq) VALUES (0, 0);
                """)
        }
        migrator.registerMigration("v16: experiment assignments") { db in
            // Each profile's variant in each experiment version of a campaign, when it was first decided
            // (ExperimentAssignmentsTable): the control group's record, and the start of every conversion window.
            try db.execute(sql: """
                CREATE TABLE experiment_assignments (
                    profile_key TEXT NOT NULL REFERENCES profiles(profile_key) ON DELETE CASCADE,
                    campaign_key TEXT NOT NULL, version TEXT NOT NULL, variant TEXT NOT NULL, assigned_at TEXT NOT NULL,
                    PRIMARY KEY (profile_key, campaign_key, version)) WITHOUT ROWID;
                CREATE INDEX experiment_assignments_by_version ON experiment_assignments (campaign_key, version, assigned_at);
                """)
        }
        migrator.registerMigration("v17: campaign conversions") { db in
            // Each profile's conversions per campaign, experiment version and conversion (CampaignConversionsTable):
            // the first one's time, how many events, and their revenue in USD.
            try db.execute(sql: """
                CREATE TABLE campaign_conversions (
                    profile_key TEXT NOT NULL REFERENCES profiles(profile_key) ON DELETE CASCADE,
                    campaign_key TEXT NOT NULL, version TEXT NOT NULL, conversion INTEGER NOT NULL, variant TEXT NOT NULL,
                    first_at TEXT NOT NULL, events INTEGER NOT NULL, revenue_usd REAL NOT NULL,
                    PRIMARY KEY (profile_key, campaign_key, version, conversion)) WITHOUT ROWID;
                CREATE INDEX campaign_conversions_by_version ON campaign_conversions (campaign_key, version, first_at);
                """)
        }
        migrator.registerMigration("v18: experiment sends") { db in
            // Per campaign, experiment version, variant and delivery outcome: how many of the partition's sends ended
            // so (ExperimentSendsTable), from the notifier's reports.
            try db.execute(sql: """
                CREATE TABLE experiment_sends (
                    campaign_key TEXT NOT NULL, version TEXT NOT NULL, variant TEXT NOT NULL, outcome TEXT NOT NULL,
                    count INTEGER NOT NULL, updated_at TEXT NOT NULL,
                    PRIMARY KEY (campaign_key, version, variant, outcome)) WITHOUT ROWID;
                """)
        }
        migrator.registerMigration("v19: the experiment arm of a push receipt") { db in
            // A push's open or button press counts for the variant the push was sent for (PushOpens).
            try db.execute(sql: """
                ALTER TABLE push_receipts ADD COLUMN experiment TEXT;
                ALTER TABLE push_receipts ADD COLUMN variant TEXT;
                """)
        }
        migrator.registerMigration("v20: one click and one dismissal per in-app impression") { db in
            // What an app reports counts only as a real app could make it (InAppReports): a click or a dismissal marks the
            // impression it follows.
            try db.execute(sql: """
                ALTER TABLE in_app_impressions ADD COLUMN clicked INTEGER NOT NULL DEFAULT 0;
                ALTER TABLE in_app_impressions ADD COLUMN dismissed INTEGER NOT NULL DEFAULT 0;
                """)
        }
        migrator.registerMigration("v21: geofence entries") { db in
            // The last counted entry of each profile into each geofence: its set's cooldown counts from it, whichever
            // device or installation reports the next (GeofenceReports).
            try db.execute(sql: """
                CREATE TABLE geofence_entries (
                    profile_key TEXT NOT NULL REFERENCES profiles(profile_key) ON DELETE CASCADE,
                    geofence TEXT NOT NULL, entered_at TEXT NOT NULL,
                    PRIMARY KEY (profile_key, geofence)) WITHOUT ROWID;
                """)
        }
        migrator.registerMigration("v22: one person's rows found through an index") { db in
            // An erasure and an export read one person's rows in every table with a profile_key, and an export finds
            // the person by address, number, installation or alias (ProfileLookup): each through an index, whatever the
            // partition holds of everyone else (ProfileReadPlanTests).
            try db.execute(sql: """
                CREATE INDEX token_owners_by_profile ON token_owners (profile_key);
                CREATE INDEX profiles_by_email ON profiles (project, lower(email));
                CREATE INDEX profiles_by_phone ON profiles (project, phone_number);
                CREATE INDEX installations_by_id ON installations (project, installation_id);
                CREATE INDEX profile_aliases_by_name ON profile_aliases (label, name);
                """)
        }
        migrator.registerMigration("v23: journeys") { db in
            // Each profile's journey instances, in flight and ended, and the versions they entered (JourneyInstancesTable).
            try db.execute(sql: JourneyInstancesTable.createSQL)
        }
        migrator.registerMigration("v24: ended journey instances pruned") { db in
            // What the retention round reads (OrchestratorRetention.pruneJourneyInstances).
            try db.execute(sql: JourneyInstancesTable.endedIndexSQL)
        }
        return migrator
    }
}
