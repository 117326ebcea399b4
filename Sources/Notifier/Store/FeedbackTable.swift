import Foundation
import GRDB
import PartitionStore
import Shared

/// What a provider or a recipient taught this notifier (`feedback.kind`).
enum FeedbackKind: String, Sendable {
    /// A push token the provider said is dead.
    case tokenInvalid = "token_invalid"
    /// An email address that bounced.
    case emailBounced = "email_bounced"
    /// The recipient's latest email or SMS marketing state (`subscribed` or `unsubscribed`).
    case emailMarketing = "email_marketing"
    case smsMarketing = "sms_marketing"

    static func marketing(_ channel: MessageChannel) -> FeedbackKind? {
        switch channel {
        case .email: .emailMarketing
        case .sms: .smsMarketing
        case .push, .webhook: nil
        }
    }
}

/// What this notifier learnt from providers and recipients before the orchestrator's next snapshot says it: applied
/// at once, so that a dead token or an unsubscribe stops the very next send.
struct LocalFeedback: Sendable, Equatable {
    var invalidTokens: Set<String> = []
    var bouncedAddresses: Set<String> = []
    /// The latest marketing change per channel (`email`, `sms`) made here, with its time.
    var marketing: [String: (state: String, at: Date)] = [:]

    static func == (lhs: LocalFeedback, rhs: LocalFeedback) -> Bool {
        lhs.invalidTokens == rhs.invalidTokens && lhs.bouncedAddresses == rhs.bouncedAddresses
            && lhs.marketing.mapValues(\.state) == rhs.marketing.mapValues(\.state)
    }
}

/// `feedback`: `LocalFeedback` per profile, one row per kind and value (one per marketing kind: the latest).
struct FeedbackTable {
    let db: Database

    init(_ db: Database) { self.db = db }

    func feedback(_ key: String) throws -> LocalFeedback {
        var feedback = LocalFeedback()
        for row in try Row.fetchAll(
            db.cachedStatement(sql: "SELECT kind, value, at FROM feedback WHERE profile_key = ?"), arguments: [key])
        {
            let value: String = row["value"]
            switch FeedbackKind(rawValue: row["kind"]) {
            case .tokenInvalid?: feedback.invalidTokens.insert(value)
            case .emailBounced?: feedback.bouncedAddresses.insert(value)
            case .emailMarketing?: feedback.marketing["email"] = (value, WireTime.parse(row["at"]) ?? .distantPast)
            case .smsMarketing?: feedback.marketing["sms"] = (value, WireTime.parse(row["at"]) ?? .distantPast)
            case nil: break
            }
        }
        return feedback
    }

    /// Records feedback; a marketing state replaces the profile's previous one.
    func record(_ key: String, _ kind: FeedbackKind, value: String, at: Date) throws {
        if kind == .emailMarketing || kind == .smsMarketing {
            try db.execute(sql: "DELETE FROM feedback WHERE profile_key = ? AND kind = ?", arguments: [key, kind.rawValue])
        }
        try db.execute(
            sql: "INSERT OR REPLACE INTO feedback (profile_key, kind, value, at) VALUES (?, ?, ?, ?)",
            arguments: [key, kind.rawValue, value, WireTime.format(at)])
    }

    /// Forgets what the profile's snapshot made moot: dead tokens it no longer holds, a bounce of an address it no
    /// longer has (nil: the profile is gone, and every row of it). What the orchestrator has not caught up with yet (a
    /// token still in the snapshot, the same address) stays, so that it still stops the next send. Without it, rows
    /// grew with every token a device ever had.
    func prune(_ key: String, keeping contact: Contact?) throws {
        guard let contact else {
            try db.execute(sql: "DELETE FROM feedback WHERE profile_key = ?", arguments: [key])
            return
        }
        let tokens = Set(contact.installations.compactMap(\.token))
        for row in try Row.fetchAll(
            db, sql: "SELECT kind, value FROM feedback WHERE profile_key = ? AND kind IN (?, ?)",
            arguments: [key, FeedbackKind.tokenInvalid.rawValue, FeedbackKind.emailBounced.rawValue])
        {
            let (kind, value): (String, String) = (row["kind"], row["value"])
            let moot = kind == FeedbackKind.tokenInvalid.rawValue ? !tokens.contains(value) : value != contact.email.address
            if moot {
                try db.execute(
                    sql: "DELETE FROM feedback WHERE profile_key = ? AND kind = ? AND value = ?", arguments: [key, kind, value])
            }
        }
    }
}
