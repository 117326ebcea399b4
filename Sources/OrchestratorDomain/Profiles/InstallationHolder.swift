import Foundation
import GRDB
import Shared

/// Whether a profile holds an installation now, for the reads an app makes of its profile's state (in-app messages,
/// content cards): after an identify or a logout, only the profile the installation moved to answers, so that no
/// answer computed for the previous profile is ever returned.
enum InstallationHolder {
    /// Whether the installation under the profile `key` is opted out; nil when the profile does not hold it (an
    /// identify or a logout not applied yet, or another user's installation). One column, not the row: every sync
    /// reads it.
    static func optedOut(_ db: Database, key: String, installationID: String) throws -> Bool? {
        guard let optedOut = try InstallationsTable(db).optedOut(key, installationID) else { return nil }
        let project = ProfileKey.project(of: key)
        // At its home, an installation linked to a user is that user's, whatever row the move has not taken yet.
        if key == ProfileKey.home(project, installationID),
            try InstallationLinksTable(db).link(project: project, installationID: installationID)?.customID != nil
        {
            return nil
        }
        return optedOut
    }
}
