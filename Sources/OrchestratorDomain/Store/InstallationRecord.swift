import Foundation
import GRDB
import PartitionStore
import Shared

/// An `installations` row, its columns as Swift types. The columns segments read are its `facts` (read alone on every
/// evaluation: `InstallationsTable.segmentFacts`), and read through it as its own (`installation.token`).
@dynamicMemberLookup
struct InstallationRecord: FetchableRecord {
    var key: String
    var installationID: String
    var project: String
    var app: String?
    var dev: Bool
    var environment: PushEnvironment?
    var tokenUpdatedAt: Date?
    var optChangedAt: Date?
    /// The app's data-collection flags; nil: never reported.
    var geoip: Bool?
    var deviceModelCollection: Bool?
    var location: Location?
    var updatedAt: Date
    /// The session in progress: its id and start.
    var openSession: (id: String, at: Date?)?
    var facts: SegmentFacts

    subscript<Value>(dynamicMember path: KeyPath<SegmentFacts, Value>) -> Value { facts[keyPath: path] }

    /// The last location kept, with when it was taken.
    struct Location {
        var latitude: Double?
        var longitude: Double?
        var accuracy: Double?
        var at: Date
    }

    init(row: Row) throws {
        key = row["profile_key"]
        installationID = row["installation_id"]
        project = row["project"]
        app = row["app"]
        dev = row["dev"]
        environment = try Self.environment(row)
        tokenUpdatedAt = try row.time("token_updated_at")
        optChangedAt = try row.time("opt_changed_at")
        geoip = row["geoip"]
        deviceModelCollection = row["device_model_collection"]
        location = try row.time("location_at").map { at in
            Location(latitude: row["latitude"], longitude: row["longitude"], accuracy: row["location_accuracy"], at: at)
        }
        updatedAt = try row.requiredTime("updated_at")
        openSession = try (row["open_session_id"] as String?).map { (id: $0, at: try row.time("open_session_at")) }
        facts = try SegmentFacts(row: row)
    }

    /// `installations.environment`: a push environment, or an error naming the column.
    static func environment(_ row: Row) throws -> PushEnvironment? {
        guard let text = row["environment"] as String? else { return nil }
        guard let environment = PushEnvironment(rawValue: text) else {
            throw DatabaseError(message: "installations.environment: unknown push environment \(text)")
        }
        return environment
    }

    /// The columns segments read (natives and push reachability), also read alone: `InstallationsTable.segmentFacts`.
    struct SegmentFacts: FetchableRecord {
        var token: String?
        var optedOut: Bool
        var notificationPermission: String?
        var detectedLanguage: String?
        var detectedRegion: String?
        var timezone: String?
        var installDate: Date
        var lastVisitAt: Date
        var lastPushAt: Date?
        var appVersion: String?
        var appBuild: String?
        var osVersion: String?
        var sdkVersion: String?
        var deviceBrand: String?
        var deviceModel: String?
        var sessionCount: Int64
        var sessionSeconds: Double
        var firstSessionAt: Date?
        var lastSessionAt: Date?

        init(row: Row) throws {
            token = row["token"]
            optedOut = row["opted_out"]
            notificationPermission = row["notification_permission"]
            detectedLanguage = row["detected_language"]
            detectedRegion = row["detected_region"]
            timezone = row["timezone"]
            installDate = try row.requiredTime("install_date")
            lastVisitAt = try row.requiredTime("last_visit_at")
            lastPushAt = try row.time("last_push_at")
            appVersion = row["app_version"]
            appBuild = row["app_build"]
            osVersion = row["os_version"]
            sdkVersion = row["sdk_version"]
            deviceBrand = row["device_brand"]
            deviceModel = row["device_model"]
            sessionCount = row["session_count"]
            sessionSeconds = row["session_seconds"]
            firstSessionAt = try row.time("first_session_at")
            lastSessionAt = try row.time("last_session_at")
        }

        /// `b.is_push_optin`: a token, notifications displayed, and not opted out. (A provisional or undecided
        /// permission still lets a background push through; the notifier decides per push type.)
        var pushReachable: Bool {
            token != nil && !optedOut && NotificationPermission.displaying.contains(notificationPermission ?? "")
        }
    }
}
