import Foundation
import GRDB
import PartitionStore
import Shared

/// An app's writes to its installation's row under the profile that holds it: first and last seen, what the SDK
/// reports, location, opt-out, and the token changes it logs.
struct InstallationWrites {
    let db: Database
    let write: Write

    /// Creates the row if needed; first seen is the install date, last seen the last visit.
    func touch(at key: String) throws {
        guard let installationID = write.installationID else { return }
        try InstallationsTable(db).touch(
            key, installationID, project: write.project, app: write.app, dev: write.dev, at: write.receivedAt)
    }

    /// The SDK's installation fields (`installation` op); returns whether push reachability changed.
    ///
    /// The data-collection flags are applied first, and stored: a device model is kept only while the installation's
    /// stored `device_model` flag is not false (batch-rules §9), whichever request or SDK sends it; `null` always
    /// erases it.
    func applyFields(_ report: InstallationReport) throws -> Bool {
        guard let installationID = write.installationID else { return false }
        let key = write.profileKey
        let table = InstallationsTable(db)
        for flag in report.dataCollection {
            try table.setDataCollection(key, installationID, flag: flag.name, flag.on)
        }
        var permissionChanged = false
        for field in report.fields where InstallationsTable.fieldColumns.contains(field.name) {
            let changed = try table.setField(key, installationID, column: field.name, field.value)
            if field.name == "notification_permission" && changed { permissionChanged = true }
        }
        return permissionChanged
    }

    /// Location, at most one every 30 seconds per installation (batch-rules §3.3): an update less than 30 s after the
    /// last one kept, or older than it, is ignored. Returns whether it was kept (segments reading `location.` then
    /// evaluate again).
    func applyLocation(_ location: LocationReport) throws -> Bool {
        guard let installationID = write.installationID else { return false }
        let at = location.time ?? write.receivedAt
        let key = write.profileKey
        let table = InstallationsTable(db)
        if let last = try table.locationTime(key, installationID), at.timeIntervalSince(last) < 30 {
            return false
        }
        try table.setLocation(
            key, installationID, latitude: location.latitude, longitude: location.longitude, accuracy: location.accuracy,
            at: at)
        return true
    }

    /// Opt-out and opt-in; returns whether the state changed.
    func setOptedOut(_ optedOut: Bool) throws -> Bool {
        guard let installationID = write.installationID else { return false }
        return try InstallationsTable(db).setOptedOut(write.profileKey, installationID, optedOut, at: write.receivedAt)
    }

    /// Takes `token` from the installation if it still has it, and logs why; returns whether it had it.
    static func removeToken(
        _ db: Database, key: String, installationID: String, token: String, at time: Date, change: String, detail: String?
    ) throws -> Bool {
        guard try InstallationsTable(db).removeToken(key, installationID, token: token, at: time) else { return false }
        try PushChangelogTable(db).log(key, installationID: installationID, at: time, change: change, token: token, detail: detail)
        return true
    }
}
