/// Why an app's report of a notification opened counts nowhere (`herald_push_opens_ignored_total{reason}`).
package enum IgnoredPushOpen: String, Sendable, CaseIterable {
    /// No push of that send was delivered to the installation.
    case unknownSend = "unknown_send"
    /// Its open or button press counted already.
    case repeated
}

/// Why an app's in-app message report counts nowhere (`herald_in_app_reports_ignored_total{reason}`).
package enum IgnoredInAppReport: String, Sendable, CaseIterable {
    case unknownMessage = "unknown_message"
    case unknownButton = "unknown_button"
    /// An impression sooner after the installation's last than the message's minimum trigger interval.
    case repeated
    /// A click or a dismissal without an impression before it.
    case noImpression = "no_impression"
}

/// Why an app's content card report counts nowhere (`herald_content_card_reports_ignored_total{reason}`).
package enum IgnoredCardReport: String, Sendable, CaseIterable {
    /// No such card in the profile's feed.
    case unknownCard = "unknown_card"
    /// Counted already.
    case repeated
    /// A click on a card without a URL.
    case noURL = "no_url"
    case notDismissible = "not_dismissible"
}

/// Why an app's geofence report counts nowhere (`herald_geofence_reports_ignored_total{reason}`).
package enum IgnoredGeofenceReport: String, Sendable, CaseIterable {
    /// No such geofence in the project's sets.
    case unknownGeofence = "unknown_geofence"
    /// A set the reporting app does not monitor.
    case notForApp = "not_for_app"
    /// An entry sooner after the profile's last entry into that geofence than the set's cooldown.
    case cooldown
}
