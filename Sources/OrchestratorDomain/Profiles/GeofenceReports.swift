import Foundation
import GRDB
import Metrics
import PartitionStore
import Shared

/// An app's report that its device entered or left a geofence (docs/geofences.md): counted only for a geofence of a set
/// the reporting app monitors, and an entry only once per the set's cooldown per profile (kept here, so a reinstall or
/// a second device does not reset it). A counted report becomes the event `GEOFENCE_ENTER` or `GEOFENCE_EXIT` of the
/// profile, with `geofence` and `set` as its attributes and the device's time: campaigns trigger on it
/// (`trigger: {event: GEOFENCE_ENTER, where: event.geofence = "paris-rivoli"}`) and segments read it
/// (`e.GEOFENCE_ENTER.last > now - 1d`). Others count nowhere (`herald_geofence_reports_ignored_total`).
struct GeofenceReports: EngagementReportApplier {
    typealias Ignored = IgnoredGeofenceReport
    static let ignoredMetric = MetricLabel(label: "herald_geofence_reports_ignored_total")
    let db: Database
    let write: Write
    let config: HeraldConfiguration

    /// The event a counted report becomes.
    static func eventName(_ kind: GeofenceReport.Kind) -> String { kind == .enter ? "GEOFENCE_ENTER" : "GEOFENCE_EXIT" }

    /// The event to apply, or nil when the report counts nowhere.
    func event(_ report: GeofenceReport) throws -> ValidatedEvent? {
        let setKey = "\(write.project)/\(report.set)"
        guard let set = config.geofenceSets[setKey], set.geofences.contains(where: { $0.id == report.geofence }) else {
            Self.ignored(.unknownGeofence)
            return nil
        }
        guard let app = write.app, set.apps.contains(app) else {
            Self.ignored(.notForApp)
            return nil
        }
        if report.kind == .enter {
            guard try GeofenceEntriesTable(db).enter(write.profileKey, geofence: "\(setKey)/\(report.geofence)", at: report.time, cooldown: set.cooldown)
            else {
                Self.ignored(.cooldown)
                return nil
            }
        }
        Counter(label: "herald_geofence_transitions_total", dimensions: [("set", setKey), ("kind", report.kind.rawValue)]).increment()
        return ValidatedEvent(
            name: Self.eventName(report.kind), time: report.time,
            attributes: [("geofence", .string(report.geofence)), ("set", .string(report.set))])
    }
}
