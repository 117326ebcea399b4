import Foundation
import GRDB
import Shared

/// Whether a profile holds an installation now, for the reads an app makes of its profile's state (in-app messages,
/// content cards): after an identify or a logout, only the profile the installation moved to answers, so that no
/// answer computed for the previous profile is ever returned.
enum InstallationHolder {
    /// The installation's row under the profile `key`; nil when the profile does not hold it (an identify or a logout
    /// not applied yet, or another user's installation).
    static func row(_ db: Database, key: String, installationID: String) throws -> Row? {
        guard let installation = try InstallationsTable(db).row(key, installationID) else { return nil }
        let project = ProfileKey.project(of: key)
        // At its home, an installation linked to a user is that user's, whatever row the move has not taken yet.
        if key == ProfileKey.home(project, installationID),
            try InstallationLinksTable(db).link(project: project, installationID: installationID)?.customID != nil
        {
            return nil
        }
        return installation
    }
}
