import Foundation

/// A set of geofences (`kind: geofence_set`, docs/geofences.md): circles an app monitors on the device, enabled per
/// app, of which each installation is given its nearest (`GeofenceSetDefinition.nearest`).
package struct GeofenceSetDefinition: Sendable {
    package struct Geofence: Sendable, Equatable {
        package var id: String
        package var latitude: Double
        package var longitude: Double
        /// Metres, at least 100.
        package var radius: Double

        package init(id: String, latitude: Double, longitude: Double, radius: Double) {
            (self.id, self.latitude, self.longitude, self.radius) = (id, latitude, longitude, radius)
        }
    }

    package var id: String
    package var project: String
    /// The apps whose installations monitor the set.
    package var apps: [String]
    package var geofences: [Geofence]
    /// The least time between two entries of one profile into one geofence that count (`geofence_enter` reports in
    /// between are ignored): kept per profile, so a reinstall or another device does not reset it.
    package var cooldown: TimeInterval
    package var origin: ConfigOrigin
    package var key: String { "\(project)/\(id)" }

    /// Braze's limits: 10,000 geofences per set, a radius of at least 100 m, a 6-hour cooldown.
    package static let maxGeofences = 10_000
    package static let minRadius = 100.0
    package static let maxRadius = 100_000.0
    package static let defaultCooldown: TimeInterval = 6 * 3600
    /// An installation is given geofences within this distance only.
    package static let reach = 2_000_000.0

    package init(id: String, project: String, apps: [String], geofences: [Geofence], cooldown: TimeInterval, origin: ConfigOrigin) {
        (self.id, self.project, self.apps, self.geofences, self.cooldown, self.origin) = (id, project, apps, geofences, cooldown, origin)
    }
}

/// How many geofences an app's installations monitor (`geofences` of `kind: app`): iOS allows 20 regions per app, of
/// which the app may keep some for itself (`reserved`).
package struct GeofenceLimit: Sendable, Equatable {
    package var max = 20
    package var reserved = 0
    package var given: Int { Swift.max(0, max - reserved) }
    package static let largest = 100

    package init(max: Int = 20, reserved: Int = 0) {
        (self.max, self.reserved) = (max, reserved)
    }
}

/// One geofence given to an installation, with its set and its distance from the installation's location.
package struct NearGeofence: Sendable, Equatable {
    package var set: String
    package var geofence: GeofenceSetDefinition.Geofence
    package var meters: Double

    /// As the app receives it: `{"id", "set", "latitude", "longitude", "radius"}`.
    package var json: JSONValue {
        .object([
            JSONMember("id", .string(geofence.id)), JSONMember("set", .string(set)),
            JSONMember("latitude", .number(JSONValue.literal(geofence.latitude))),
            JSONMember("longitude", .number(JSONValue.literal(geofence.longitude))),
            JSONMember("radius", .number(JSONValue.literal(geofence.radius))),
        ])
    }
}

extension HeraldConfiguration {
    /// How many geofences the installations of `app` in `project` watch (the default for an app not configured).
    package func geofenceLimit(project: String, app: String) -> GeofenceLimit { apps["\(project)/\(app)"]?.geofenceLimit ?? GeofenceLimit() }

    /// The geofence sets enabled for `app` in `project`.
    package func geofenceSets(project: String, app: String) -> [GeofenceSetDefinition] {
        geofenceSets.values.filter { $0.project == project && $0.apps.contains(app) }.sorted { $0.id < $1.id }
    }

    /// The geofences an installation of `app` at (`latitude`, `longitude`) is given: of the app's sets, the nearest
    /// `GeofenceLimit.given` within 2,000 km, nearest first (then by set and id, so that equal distances keep one
    /// order).
    package func nearestGeofences(project: String, app: String, latitude: Double, longitude: Double) -> [NearGeofence] {
        let limit = geofenceLimit(project: project, app: app).given
        guard limit > 0 else { return [] }
        // The best `limit` so far, in order: a candidate goes in only if it beats the last (at most 100 of them, so
        // a set of 10,000 is one pass, not a sort of everything within reach).
        var near: [NearGeofence] = []
        near.reserveCapacity(limit + 1)
        let before = { (a: NearGeofence, b: NearGeofence) in (a.meters, a.set, a.geofence.id) < (b.meters, b.set, b.geofence.id) }
        for set in geofenceSets(project: project, app: app) {
            for geofence in set.geofences {
                let meters = GeoCircle.distance(latitude, longitude, geofence.latitude, geofence.longitude)
                guard meters <= GeofenceSetDefinition.reach else { continue }
                if near.count == limit, let last = near.last, last.meters < meters { continue }
                let candidate = NearGeofence(set: set.id, geofence: geofence, meters: meters)
                if near.count == limit, let last = near.last, !before(candidate, last) { continue }
                let index = near.firstIndex { before(candidate, $0) } ?? near.count
                near.insert(candidate, at: index)
                if near.count > limit { near.removeLast() }
            }
        }
        return near
    }
}
