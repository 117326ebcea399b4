/// What made a campaign consider a profile: the `type` of a send's trigger on the wire (`SendRequest.Trigger`), of a
/// delay's kept trigger, and the `trigger` of the decision logs. One enum for the orchestrator that makes it and the
/// notifier that reads it (APNs' source type; an uninstall probe and a geofence sync stay out of the inbox).
package enum TriggerType: String, Codable, Sendable, CaseIterable {
    /// A custom event, a purchase or a session (`event_name` names it).
    case event
    /// The profile entered the campaign's segment.
    case segmentEntry = "segment_entry"
    /// The profile left the campaign's segment.
    case segmentExit = "segment_exit"
    /// A scheduled campaign's run (once, recurring, or at the recipient's local time).
    case schedule
    /// An API call: `/campaigns/trigger/send`, or a transactional push of `POST /v1/sends/push`.
    case api
    /// An app's session started (`AppTrigger.sessionStart`).
    case sessionStart = "session_start"
    /// A notification of a campaign was opened (`AppTrigger.pushOpen`).
    case pushOpen = "push_open"
    /// An uninstall-tracking probe: a silent push the user never sees.
    case uninstallTracking = "uninstall_tracking"
    /// A geofence sync: a silent push telling the app its geofences changed (docs/geofences.md).
    case geofenceSync = "geofence_sync"
    /// A template's preview (`herald template preview`): rendered, never sent.
    case preview
    /// An in-app message chosen for an app's read.
    case inApp = "in_app"
    /// A content card rendered for a feed read.
    case card

    /// The trigger type of an app's report.
    package init(_ trigger: AppTrigger) {
        switch trigger {
        case .sessionStart: self = .sessionStart
        case .pushOpen: self = .pushOpen
        }
    }
}
