import Crypto
import Foundation
import GRDB
import Shared

/// The geofences an installation monitors (docs/geofences.md): of its app's geofence sets, the nearest within 2,000 km
/// of the installation's last location, as many as the app's limit gives (`HeraldConfiguration.nearestGeofences`).
/// The app syncs them (`GET /v1/app/geofences`), with an `ETag` so that a sync with nothing new is a 304.
package struct GeofenceSync {
    let db: Database
    let config: HeraldConfiguration

    package init(db: Database, config: HeraldConfiguration) {
        self.db = db
        self.config = config
    }

    package struct Answer: Sendable, Equatable {
        /// `{"located": Bool, "max": N, "geofences": [ … ]}`; nil when the app's tag is this answer's.
        package var json: JSONValue?
        /// A digest of the answer: the same geofences give the same tag.
        package var etag: String
    }

    /// The answer for the installation of `app` under the profile `key`; nil when the profile does not hold the
    /// installation. Opted out: none (the app monitors nothing for a user who asked for nothing).
    package func answer(key: String, installationID: String, app: String, revalidates: (String) -> Bool = { _ in false }) throws -> Answer? {
        guard let optedOut = try InstallationHolder.optedOut(db, key: key, installationID: installationID) else { return nil }
        let project = ProfileKey.project(of: key)
        let location = optedOut ? nil : try InstallationsTable(db).record(key, installationID)?.location
        var near: [NearGeofence] = []
        if let location, let latitude = location.latitude, let longitude = location.longitude {
            near = config.nearestGeofences(project: project, app: app, latitude: latitude, longitude: longitude)
        }
        // Not the location itself: a device moving within its neighbourhood keeps its geofences, and its tag.
        let json = JSONValue.object([
            JSONMember("located", .bool(location?.latitude != nil)),
            JSONMember("max", .number(String(config.geofenceLimit(project: project, app: app).given))),
            JSONMember("geofences", .array(near.map(\.json))),
        ])
        let etag = "\"g\(Array(SHA256.hash(data: json.serialized).prefix(12)).hexString)\""
        return Answer(json: revalidates(etag) ? nil : json, etag: etag)
    }
}
