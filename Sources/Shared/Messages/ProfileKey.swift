/// The key scheme of the keyed topics (design brief, "Profile key"): every record of a profile has the same key, so the
/// same partition number, on every topic. One project holds three key spaces:
///
/// - a profile, by custom ID: `<project>/<custom_id>`;
/// - an installation's *home* (its anonymous profile and its link to a profile): `<project>/install/<installation_id>`;
/// - a push token's owner: `<project>/token/<token>`.
///
/// A custom ID that starts with `install/` or `token/` would land in another space, so the ingest refuses it
/// (`Rules.customID`).
package enum ProfileKey {
    /// What a custom ID may not start with: the other key spaces of a project.
    package static let reservedPrefixes = ["install/", "token/"]

    package static func profile(_ project: String, _ customID: String) -> String { "\(project)/\(customID)" }

    package static func home(_ project: String, _ installationID: String) -> String { "\(project)/install/\(installationID)" }

    package static func token(_ project: String, _ token: String) -> String { "\(project)/token/\(token)" }

    /// The custom ID's profile, else the installation's home.
    package static func of(_ project: String, customID: String?, installationID: String?) -> String {
        customID.map { profile(project, $0) } ?? home(project, installationID ?? "")
    }

    /// The project of a key: what comes before its first slash.
    package static func project(of key: String) -> String { String(key.prefix { $0 != "/" }) }

    /// Whether a custom ID would collide with another key space.
    package static func collides(customID: String) -> Bool {
        reservedPrefixes.contains { customID.hasPrefix($0) }
    }
}
