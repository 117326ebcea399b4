import Foundation
import GRDB
import Metrics
import PartitionStore
import Shared

/// What a location the app reports changes of its installation's geofences (docs/geofences.md): when its nearest
/// geofences change, a silent push tells the app to sync them again (`herald_geofence_sync` in its payload), and each
/// geofence newly given that the device is already inside counts as an entry, for iOS reports none for a region the
/// device is in when it starts watching it.
struct GeofenceUpdates {
    let db: Database
    let write: Write
    let config: HeraldConfiguration

    /// The campaign label of the sync pushes (their sends and delivery reports).
    static let campaign = "geofence-sync"

    /// The installation's geofences at its location as stored (before a new one is applied); none for an app without
    /// sets, or an installation without a location.
    func given() throws -> [NearGeofence] {
        guard let app = write.app, let installationID = write.installationID,
            !config.geofenceSets(project: write.project, app: app).isEmpty,
            let location = try InstallationsTable(db).record(write.profileKey, installationID)?.location,
            let latitude = location.latitude, let longitude = location.longitude
        else { return [] }
        return config.nearestGeofences(project: write.project, app: app, latitude: latitude, longitude: longitude)
    }

    /// After a location was applied (taken at `time`): when the geofences given changed from `before`, the sync push
    /// (to an installation with a token) and the entries into the geofences newly given that hold the location, as the
    /// events to apply (`GeofenceReports`: the app's sets, the cooldown), marked `synthesized`.
    func located(before: [NearGeofence], at time: Date, _ effects: inout WriteEffects) throws -> [ValidatedEvent] {
        let after = try given()
        let ids = { (geofences: [NearGeofence]) in geofences.map { "\($0.set)/\($0.geofence.id)" } }
        guard ids(after) != ids(before), let installationID = write.installationID else { return [] }
        if let push = try syncPush(installationID: installationID) { effects.output(push) }
        let known = Set(ids(before))
        var entries: [ValidatedEvent] = []
        for near in after where !known.contains("\(near.set)/\(near.geofence.id)") && near.meters <= near.geofence.radius {
            let report = GeofenceReport(kind: .enter, set: near.set, geofence: near.geofence.id, time: time)
            if var event = try GeofenceReports(db: db, write: write, config: config).event(report) {
                event.attributes.append(("synthesized", .bool(true)))
                entries.append(event)
            }
        }
        return entries
    }

    /// The silent push that tells the installation's app to sync its geofences; nil without a token.
    func syncPush(installationID: String) throws -> PendingOutput? {
        let key = write.profileKey
        guard let installation = try InstallationsTable(db).record(key, installationID), installation.token?.isEmpty == false else {
            return nil
        }
        let (project, app) = (installation.project, installation.app)
        let occurrence = "\(installationID) \(write.id)"
        var send = SendRequest(
            sendID: SendIDDerivation.campaign(campaign: Self.campaign, step: "sync", profileKey: key, occurrence: occurrence),
            project: project, profileKey: key, customID: ProfileKey.customID(of: key, project: project), channel: .push,
            marketing: false, app: app, campaign: Self.campaign, step: "sync", occurrence: occurrence, template: Self.campaign,
            language: "default", content: ["push_type": "background", "priority": "normal"],
            payload: ["herald_geofence_sync": .bool(true)],
            trigger: SendRequest.Trigger(type: .geofenceSync, at: write.receivedAt), decidedAt: write.receivedAt,
            expiresAt: write.receivedAt.addingTimeInterval(86_400))
        send.installationID = installationID
        send.contactRevision = try ProfilesTable(db).contactRevision(key)
        Counter(label: "herald_geofence_syncs_total", dimensions: [("app", "\(project)/\(app ?? "")")]).increment()
        return PendingOutput(topic: HeraldTopic.sendsPush.name, key: key, value: try Wire.encode(send))
    }
}
