import Foundation
import GRDB
import PartitionStore
import Shared

/// Which profiles of a partition an identifier reaches (docs/data-rights.md, "Export"): a custom ID, an email address, a
/// phone number, an installation (the profiles that hold it, and its anonymous home), a Braze alias (the profile that
/// holds it, and its alias-only profile). Every profile an identifier reaches, not the first: two users can share an
/// address.
package enum ProfileLookup {
    package enum Identifier: Sendable, Equatable {
        case customID(String)
        case email(String)
        case phone(String)
        case installation(String)
        case alias(UserAlias)
    }

    /// The profile keys of `project` this partition holds that `identifier` reaches.
    package static func keys(_ db: Database, project: String, _ identifier: Identifier) throws -> [String] {
        func existing(_ keys: [String]) throws -> [String] { try keys.filter { try ProfilesTable(db).exists($0) } }
        var keys: [String]
        switch identifier {
        case .customID(let id): keys = try existing([ProfileKey.profile(project, id)])
        case .email(let address):
            keys = try String.fetchAll(db, sql: byEmail, arguments: [project, address])
        case .phone(let number):
            keys = try String.fetchAll(db, sql: byPhone, arguments: [project, number])
        case .installation(let id):
            keys = try String.fetchAll(db, sql: byInstallation, arguments: [project, id])
            keys += try existing([ProfileKey.home(project, id)])
        case .alias(let alias):
            keys = try String.fetchAll(db, sql: byAlias, arguments: [alias.label, alias.name, project + "/", project + "/"])
            keys += try existing([ProfileKey.alias(project, alias)])
        }
        return Array(Set(keys)).sorted()
    }

    /// The queries, each through an index (`ProfileReadPlanTests`): an address in any case, a number, an
    /// installation's holders, an alias's holder.
    static let byEmail = "SELECT profile_key FROM profiles WHERE project = ? AND lower(email) = lower(?)"
    static let byPhone = "SELECT profile_key FROM profiles WHERE project = ? AND phone_number = ?"
    static let byInstallation = "SELECT profile_key FROM installations WHERE project = ? AND installation_id = ?"
    static let byAlias = "SELECT profile_key FROM profile_aliases WHERE label = ? AND name = ? AND substr(profile_key, 1, length(?)) = ?"
}
