import Foundation

/// A decided send (`herald.sends.push|email|sms`, keyed by profile key): the rendered message, who it is for, the
/// channel's target rules, and trace fields. The notifier re-checks reachability at send time and dedupes by `send_id`.
package struct SendRequest: WireMessage {
    package static let kind = "send"
    package static let version = 1

    /// Deterministic: the same campaign, step, profile and occurrence give the same id (a replay is deduplicated).
    package var sendID: String
    package var project: String
    package var profileKey: String
    package var customID: String?
    package var channel: MessageChannel
    /// Marketing sends need the channel's marketing subscription; transactional ones only a reachable address.
    package var marketing: Bool
    /// Push: only this app's installations (nil: every reachable installation of the project's apps).
    package var app: String?
    package var campaign: String
    /// The campaign's message (`message-<index>`).
    package var step: String
    /// What made this send happen once: the trigger event's record id, the segment entry, the schedule's time, the API
    /// call's id.
    package var occurrence: String
    /// The template and the language variant used.
    package var template: String
    package var language: String
    /// The rendered fields (push: title, body, deeplink…; email: subject, text, html…; sms: text).
    package var content: [String: String]
    /// Push: custom payload keys, merged at the root of the notification, with their JSON types (FCM's data takes the
    /// strings as they are and the other values as their JSON text).
    package var payload: [String: JSONValue]?
    package var trigger: Trigger
    /// When the orchestrator decided the send.
    package var decidedAt: Date
    /// A send not delivered by then is dropped by the notifier.
    package var expiresAt: Date?
    /// A test send ("send a test", `herald send-test`): delivered like any other, never kept in the inbox.
    package var test: Bool? = nil
    /// Push to one device token instead of the profile's installations (a transactional send to a raw token): needs
    /// no contact, and is never kept in the inbox.
    package var token: RawToken? = nil
    /// Push: only this installation of the profile (a test send to one device).
    package var installationID: String? = nil
    /// When the campaign meant the message to leave: the trigger's time plus the campaign's delay (absent without a
    /// delay: the trigger's time). The notifier's latency metric counts from here, so a 1 h delay is not latency.
    package var dueAt: Date? = nil
    /// The ingest request whose write triggered the send (`X-Request-Id`): the correlation id of the delivery logs.
    package var requestID: String? = nil
    /// The campaign's experiment the send is part of: its version and the profile's variant (docs/measurement.md).
    package var experiment: String? = nil
    package var variant: String? = nil
    /// The revision of the profile's contact snapshot (`herald.contacts`) when the send was decided: the notifier
    /// resolves the send's targets only once it holds that snapshot or a newer one (the two topics are read
    /// independently). Absent in sends that need no contact (raw tokens) and in sends from before revisions.
    package var contactRevision: Int? = nil
    /// Not to leave before this instant: a send decided ahead of its time (a local-time schedule's members are decided
    /// shortly before their 09:00, so that a zone's release is ready when it comes). The notifier holds it until then.
    package var notBefore: Date? = nil
    /// Push: the buttons of the notification's `category`, by app, for the apps whose configuration defines it.
    package var actions: [String: [PushAction]]? = nil
    /// A transactional push of `POST /v1/sends/push` (true), not a campaign's message: its `campaign` is the caller's
    /// free label, kept in reports and logs but never a metric label (one series per label the API was given, forever).
    package var transactional: Bool? = nil
    /// Email: false when the campaign turned off open and click tracking (`tracking: false`); absent: tracked.
    package var tracking: Bool? = nil
    /// Push: the in-app message the app shows when the push is opened (the campaign message's `landing`).
    package var landing: String? = nil
    /// Webhook: the project's endpoint called (`kind: webhook_endpoint`); the content holds the rendered request
    /// (`url`, `method`, `content_type`, `body`, `header.<name>`).
    package var endpoint: String? = nil

    /// A silent push the user never sees, kept out of the inbox: an uninstall-tracking probe, a geofence sync.
    package var isSilentSignal: Bool { trigger.type == .uninstallTracking || trigger.type == .geofenceSync }

    package struct RawToken: Codable, Sendable, Equatable {
        package var token: String
        /// The app the token belongs to (its platform picks the provider, its bundle id the APNs topic).
        package var app: String
        /// The APNs host; production when nil.
        package var environment: PushEnvironment?

        package init(token: String, app: String, environment: PushEnvironment? = nil) {
            self.token = token
            self.app = app
            self.environment = environment
        }
    }

    package struct Trigger: Codable, Sendable, Equatable {
        package var type: TriggerType
        package var eventName: String?
        /// The id of the record that triggered (the event's id, or the API call's).
        package var eventID: String?
        /// When the trigger happened (the event's ingest time, the entry, the scheduled time).
        package var at: Date

        enum CodingKeys: String, CodingKey {
            case type, at
            case eventName = "event_name", eventID = "event_id"
        }

        package init(type: TriggerType, eventName: String? = nil, eventID: String? = nil, at: Date) {
            self.type = type
            self.eventName = eventName
            self.eventID = eventID
            self.at = at
        }
    }

    package init(
        sendID: String, project: String, profileKey: String, customID: String?, channel: MessageChannel, marketing: Bool,
        app: String?, campaign: String, step: String, occurrence: String, template: String, language: String,
        content: [String: String], payload: [String: JSONValue]?, trigger: Trigger, decidedAt: Date, expiresAt: Date?
    ) {
        self.sendID = sendID
        self.project = project
        self.profileKey = profileKey
        self.customID = customID
        self.channel = channel
        self.marketing = marketing
        self.app = app
        self.campaign = campaign
        self.step = step
        self.occurrence = occurrence
        self.template = template
        self.language = language
        self.content = content
        self.payload = payload
        self.trigger = trigger
        self.decidedAt = decidedAt
        self.expiresAt = expiresAt
    }

    enum CodingKeys: String, CodingKey {
        case project, channel, marketing, app, campaign, step, occurrence, template, language, content, payload, trigger
        case sendID = "send_id", profileKey = "profile_key", customID = "custom_id", decidedAt = "decided_at"
        case expiresAt = "expires_at", test, token, installationID = "installation_id", requestID = "request_id"
        case dueAt = "due_at", contactRevision = "contact_revision", notBefore = "not_before", actions, transactional
        case experiment, variant, tracking, landing, endpoint
    }
}
