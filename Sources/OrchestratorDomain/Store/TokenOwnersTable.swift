import Foundation
import GRDB
import PartitionStore
import Shared

/// Who holds a push token: a profile, its installation, and since when the token is registered there.
struct TokenOwner {
    var profileKey: String
    var installationID: String
    var since: Date
}

/// `token_owners`: at a token's key, the profile and installation it belongs to (a token is on one installation at a
/// time).
struct TokenOwnersTable {
    let db: Database

    init(_ db: Database) { self.db = db }

    func owner(project: String, token: String) throws -> TokenOwner? {
        try Row.fetchOne(
            db.cachedStatement(
                sql: "SELECT profile_key, installation_id, since FROM token_owners WHERE project = ? AND token = ?"),
            arguments: [project, token]
        ).map { TokenOwner(profileKey: $0["profile_key"], installationID: $0["installation_id"], since: try $0.requiredTime("since")) }
    }

    /// Forgets the token's owner if it is `profileKey`; returns whether it was.
    func forget(project: String, token: String, owner profileKey: String) throws -> Bool {
        try db.executeCached(
            sql: "DELETE FROM token_owners WHERE project = ? AND token = ? AND profile_key = ?", arguments: [project, token, profileKey])
        return db.changesCount > 0
    }

    func set(project: String, token: String, _ owner: TokenOwner) throws {
        try db.executeCached(sql: """
                INSERT INTO token_owners (project, token, profile_key, installation_id, since) VALUES (?, ?, ?, ?, ?)
                ON CONFLICT (project, token) DO UPDATE SET profile_key = excluded.profile_key,
                    installation_id = excluded.installation_id, since = excluded.since
                """, arguments: [project, token, owner.profileKey, owner.installationID, WireTime.format(owner.since)])
    }
}
