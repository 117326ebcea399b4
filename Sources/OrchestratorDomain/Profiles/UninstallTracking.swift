import Crypto
import Foundation
import GRDB
import Metrics
import PartitionStore
import Shared

/// Uninstall tracking (Braze document §5.7; docs/measurement.md, "Uninstalls"), for the apps that turn it on
/// (`uninstall_tracking: true`): each installation with a push token gets a silent push once a day, at a time of day of
/// its own (a hash of its id: the probes of a project spread over the day), marked so the app can ignore it
/// (`herald_uninstall_tracking` in its payload). An APNs `Unregistered` or FCM `UNREGISTERED` answer to any push of such
/// an app (a probe or a campaign's) becomes an `UNINSTALL` event on the profile at the answer's time, which segments
/// read (`e.UNINSTALL`) and campaigns trigger on; the token is removed as for any other app.
struct UninstallTracking {
    let db: Database
    let config: HeraldConfiguration

    static let eventName = "UNINSTALL"
    /// The campaign label of the probes (their sends and delivery reports).
    static let campaign = "uninstall-tracking"
    static let day: TimeInterval = 86_400

    /// Whether the project's app tracks uninstalls.
    func tracks(project: String, app: String?) -> Bool {
        guard let app else { return false }
        return config.apps["\(project)/\(app)"]?.uninstallTracking == true
    }

    /// The installation's next probe after `time`: its own second of the day (SHA-256 of its id), the first such
    /// instant later than `time`.
    static func nextProbe(installationID: String, after time: Date) -> Date {
        let digest = Array(SHA256.hash(data: Array("herald-uninstall\n\(installationID)".utf8)))
        let second = TimeInterval(digest.prefix(8).reduce(UInt64(0)) { $0 << 8 | UInt64($1) } % UInt64(day))
        let midnight = (time.timeIntervalSince1970 / day).rounded(.down) * day
        let today = midnight + second
        return Date(timeIntervalSince1970: today > time.timeIntervalSince1970 ? today : today + day)
    }

    /// A push token registered: the installation's probes start, when its app tracks uninstalls and they have not
    /// (an app sends its token at each launch: the next probe stays where it is).
    func tokenRegistered(key: String, installationID: String, at time: Date) throws {
        guard let installation = try InstallationsTable(db).record(key, installationID), installation.token != nil,
            tracks(project: installation.project, app: installation.app),
            try !TimersTable(db).exists(key: key, kind: .uninstall, ref: installationID)
        else { return }
        try TimersTable(db).set(
            key: key, kind: .uninstall, ref: installationID, due: Self.nextProbe(installationID: installationID, after: time))
    }

    /// The installation's probe is due: its silent push when it still has a token and its app still tracks, and the next
    /// probe a day later; nothing (and no next one) otherwise.
    func probe(key: String, installationID: String, now: Date) throws -> PendingOutput? {
        guard let installation = try InstallationsTable(db).record(key, installationID), installation.token?.isEmpty == false,
            tracks(project: installation.project, app: installation.app), !installation.dev
        else { return nil }
        let (project, app) = (installation.project, installation.app)
        try TimersTable(db).set(
            key: key, kind: .uninstall, ref: installationID, due: Self.nextProbe(installationID: installationID, after: now))
        let day = WireTime.day(now)
        var send = SendRequest(
            sendID: SendIDDerivation.campaign(campaign: Self.campaign, step: "probe", profileKey: key, occurrence: "\(installationID) \(day)"),
            project: project, profileKey: key, customID: ProfileKey.customID(of: key, project: project), channel: .push,
            marketing: false, app: app, campaign: Self.campaign, step: "probe", occurrence: "\(installationID) \(day)",
            template: "uninstall-tracking", language: "default",
            content: ["push_type": "background", "priority": "normal"], payload: ["herald_uninstall_tracking": .bool(true)],
            trigger: SendRequest.Trigger(type: .uninstallTracking, at: now), decidedAt: now, expiresAt: now.addingTimeInterval(Self.day))
        send.installationID = installationID
        send.contactRevision = try ProfilesTable(db).contactRevision(key)
        Counter(label: "herald_uninstall_probes_total", dimensions: [("app", "\(project)/\(app ?? "")")]).increment()
        return PendingOutput(topic: HeraldTopic.sendsPush.name, key: key, value: try Wire.encode(send))
    }

    /// The provider said the installation's token is dead: an `UNINSTALL` event on the profile at that time when its
    /// app tracks uninstalls (its attributes: the app, the installation, and the campaign whose push found it). Returns
    /// the event's trigger, or nil.
    func uninstalled(key: String, installationID: String, report: DeliveryReport) throws -> TriggerContext? {
        guard let installation = try InstallationsTable(db).record(key, installationID),
            tracks(project: installation.project, app: installation.app)
        else { return nil }
        let (project, app) = (installation.project, installation.app ?? "")
        let campaign = report.campaign ?? ""
        var attributes: [(String, AttributeValue)] = [("app", .string(app)), ("installation_id", .string(installationID))]
        if !campaign.isEmpty { attributes.append(("campaign", .string(campaign))) }
        let event = ValidatedEvent(name: Self.eventName, id: "uninstall \(report.id)", time: report.at, attributes: attributes)
        let stored = try ProfileEdits(db).applyEvent(key, event, receivedAt: report.at)
        let detectedBy = campaign == Self.campaign ? "probe" : config.campaigns["\(project)/\(campaign)"] != nil ? "campaign" : "other"
        Counter(label: "herald_uninstalls_total", dimensions: [("app", "\(project)/\(app)"), ("detected_by", detectedBy)]).increment()
        if detectedBy == "campaign" {
            Counter(label: "herald_campaign_uninstalls_total", dimensions: [("campaign", "\(project)/\(campaign)")]).increment()
        }
        let id = "uninstall \(report.id) \(installationID)"
        return TriggerContext(
            type: .event, eventName: Self.eventName, eventID: id, occurrence: "event \(id)", at: report.at, attributes: stored,
            label: nil, requestID: nil, fromServer: true)
    }
}
