import Foundation

/// One service's part of an erasure's receipt (`herald.erasures`, keyed by profile): what its stores held of the profile
/// and removed (rows per table), and the tombstones it wrote on compacted topics. The orchestrator writes its part when
/// it applies the delete, the notifier when it reads the profile's contact tombstone, which carries the erasure's id
/// (`herald-erasure` header). `herald profile erase` waits for both (docs/data-rights.md, "Erase").
package struct ErasureReceipt: WireMessage {
    package static let kind = "erasure_receipt"
    package static let version = 1

    /// The delete's record id (`herald.ingest`): the same in both parts.
    package var erasure: String
    package var project: String
    package var profileKey: String
    /// `orchestrator` or `notifier`.
    package var service: String
    /// `<table>` → rows removed; every table of the service's partition database that had any.
    package var removed: [String: Int]
    /// `<topic>` → tombstones written for the profile (its contact snapshot; the changelog's rows).
    package var tombstones: [String: Int]
    /// Hints of the addresses put on the suppression list (`do_not_contact`).
    package var suppressed: [String] = []
    package var at: Date

    package init(
        erasure: String, project: String, profileKey: String, service: String, removed: [String: Int],
        tombstones: [String: Int], suppressed: [String] = [], at: Date
    ) {
        self.erasure = erasure
        self.project = project
        self.profileKey = profileKey
        self.service = service
        self.removed = removed
        self.tombstones = tombstones
        self.suppressed = suppressed
        self.at = at
    }

    /// The header on a contact tombstone that names the erasure it ends.
    package static let header = "herald-erasure"

    enum CodingKeys: String, CodingKey {
        case erasure, project, service, removed, tombstones, suppressed, at
        case profileKey = "profile_key"
    }
}
