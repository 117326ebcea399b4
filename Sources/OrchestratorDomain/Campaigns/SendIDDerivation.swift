import Crypto
import Foundation
import Shared

/// How a send's id is derived: deterministic, so that a decision made again (a replayed record, a restored partition)
/// is one send, which the notifier's ledger dedupes by its id. Every derivation that was ever used stays here with its
/// version, and a record says which one its send was derived with: changing one silently gives a record applied again
/// after the upgrade another id, and its message goes twice. Golden ids pin each (`SendIDTests`).
enum SendIDDerivation: Int, Sendable, CaseIterable {
    /// Transactional pushes before 89ff821: SHA-256 over "push_send", the key and the record's id.
    case v1 = 1
    /// Since 89ff821: the campaigns' derivation, campaign "push_send", step "push", occurrence the record's id.
    case v2 = 2

    /// What the ingest writes on new `push_send` records.
    static let current = SendIDDerivation(rawValue: TransactionalPush.currentSendIDVersion)!

    /// 89ff821's time: `push_send` records without a version received before it were derived with v1 (that change
    /// predates the version field).
    static let v2Since = Date(timeIntervalSince1970: 1_795_566_654)  // 2026-11-25T00:30:54Z

    /// The derivation of a `push_send` record.
    static func of(_ push: TransactionalPush, receivedAt: Date) -> SendIDDerivation {
        if let version = push.sendIDVersion { return SendIDDerivation(rawValue: version) ?? .current }
        return receivedAt < v2Since ? .v1 : .v2
    }

    /// A transactional push's id: from the key it is sent from and the record's id.
    func transactional(key: String, recordID: String) -> String {
        switch self {
        case .v1: Self.hex(SHA256.hash(data: Data("push_send\u{0}\(key)\u{0}\(recordID)".utf8)))
        case .v2: Self.campaign(campaign: "push_send", step: "push", profileKey: key, occurrence: recordID)
        }
    }

    /// A campaign message's id: 32 hex characters of SHA-256 over campaign, step, profile and occurrence (one
    /// derivation since the beginning).
    static func campaign(campaign: String, step: String, profileKey: String, occurrence: String) -> String {
        hex(SHA256.hash(data: Data("\(campaign)\u{0}\(step)\u{0}\(profileKey)\u{0}\(occurrence)".utf8)))
    }

    private static func hex(_ digest: SHA256.Digest) -> String { digest.prefix(16).hexString }
}
