import Foundation

/// The key scheme of the keyed topics (design brief, "Profile key"): every record of a profile has the same key, so the
/// same partition number, on every topic. One project holds three key spaces:
///
/// - a profile, by custom ID: `<project>/<custom_id>`;
/// - an installation's *home* (its anonymous profile and its link to a profile): `<project>/install/<installation_id>`;
/// - a push token's owner: `<project>/token/<token>`;
/// - a Braze alias's *home* (its alias-only profile and its link to a profile): `<project>/alias/<label>/<name>`, the
///   label with `%` and `/` escaped (`%25`, `%2F`) so that the key names one pair.
///
/// A custom ID that starts with `install/`, `token/` or `alias/` would land in another space, so the ingest refuses it
/// (`Rules.customID`).
package enum ProfileKey {
    /// What a custom ID may not start with: the other key spaces of a project.
    package static let reservedPrefixes = ["install/", "token/", "alias/"]

    package static func profile(_ project: String, _ customID: String) -> String { "\(project)/\(customID)" }

    package static func home(_ project: String, _ installationID: String) -> String { "\(project)/install/\(installationID)" }

    package static func token(_ project: String, _ token: String) -> String { "\(project)/token/\(token)" }

    package static func alias(_ project: String, _ alias: UserAlias) -> String {
        let label = alias.label.replacingOccurrences(of: "%", with: "%25").replacingOccurrences(of: "/", with: "%2F")
        return "\(project)/alias/\(label)/\(alias.name)"
    }

    /// The custom ID's profile, else the alias's home, else the installation's home.
    package static func of(_ project: String, customID: String?, alias: UserAlias? = nil, installationID: String?) -> String {
        if let customID { return profile(project, customID) }
        if let alias { return self.alias(project, alias) }
        return home(project, installationID ?? "")
    }

    /// The project of a key: what comes before its first slash.
    package static func project(of key: String) -> String { String(key.prefix { $0 != "/" }) }

    /// The custom ID of a named profile's key (`<project>/<custom_id>`); nil for the other key spaces (an installation's
    /// home, a token's, an alias's) and another project's keys.
    package static func customID(of key: String, project: String) -> String? {
        guard key.hasPrefix(project + "/") else { return nil }
        let rest = String(key.dropFirst(project.count + 1))
        return rest.isEmpty || collides(customID: rest) ? nil : rest
    }

    /// Whether a custom ID would collide with another key space.
    package static func collides(customID: String) -> Bool {
        reservedPrefixes.contains { customID.hasPrefix($0) }
    }
}
