import Foundation
import Shared

/// Who a send reaches, decided from the contact state at the moment of the attempt (not of the decision).
enum Eligibility {
    struct Resolution: Sendable, Equatable {
        var targets: [DeliveryTarget]
        /// Targets left out, each with the reason (push: per installation of the app).
        var skipped: [(id: String, installationID: String?, reason: DeliveryReason.Suppression)]

        static func == (lhs: Resolution, rhs: Resolution) -> Bool {
            lhs.targets == rhs.targets && lhs.skipped.map(\.id) == rhs.skipped.map(\.id)
                && lhs.skipped.map(\.reason) == rhs.skipped.map(\.reason)
        }
    }

    /// What an installation's `project/app` names: an app of a platform, or a Segment source (docs/ingest.md), whose
    /// anonymous ids are installation-like rows of the profile and no device, so push leaves them out.
    enum Origin: Sendable, Equatable {
        case app(Platform)
        case segmentSource
    }

    /// The targets of `send` now. `origins` maps `project/app` to what it names.
    /// `suppressions`: the suppression list, whose addresses are never sent to (docs/data-rights.md).
    static func resolve(
        _ send: SendRequest, contact: Contact?, feedback: LocalFeedback, origins: [String: Origin],
        suppressions: SuppressionList? = nil
    ) -> Resolution {
        if send.channel == .push, let raw = send.token {
            guard case .app(let platform)? = origins["\(send.project)/\(raw.app)"] else {
                return Resolution(targets: [], skipped: [("token", nil, .unknownApp)])
            }
            guard !feedback.invalidTokens.contains(raw.token) else { return Resolution(targets: [], skipped: [("token", nil, .tokenInvalid)]) }
            return Resolution(
                targets: [DeliveryTarget(id: "token", address: raw.token, app: raw.app, platform: platform, environment: raw.environment)],
                skipped: [])
        }
        // A webhook calls the project's endpoint, whoever the send is about: no contact is needed.
        if send.channel == .webhook {
            return Resolution(targets: [DeliveryTarget(id: WebhookGate.endpointKey(send), address: send.content["url"] ?? "")], skipped: [])
        }
        guard let contact else { return Resolution(targets: [], skipped: [(send.channel.rawValue, nil, .noContact)]) }
        switch send.channel {
        case .push:
            var resolution = Resolution(targets: [], skipped: [])
            let installations = contact.installations.filter {
                (send.app == nil || $0.app == send.app) && (send.installationID == nil || $0.id == send.installationID)
                    && origins["\(send.project)/\($0.app ?? "")"] != .segmentSource
            }
            if installations.isEmpty { resolution.skipped.append(("push", nil, .noInstallation)) }
            for installation in installations {
                let skip = { (reason: DeliveryReason.Suppression) in resolution.skipped.append((installation.id, installation.id, reason)) }
                guard !installation.optedOut else { skip(.optedOut); continue }
                guard let token = installation.token else { skip(.noToken); continue }
                guard !feedback.invalidTokens.contains(token) else { skip(.tokenInvalid); continue }
                guard NotificationPermission.displaying.contains(installation.notificationPermission ?? "") else {
                    skip(.notificationsNotAllowed)
                    continue
                }
                guard let app = installation.app, case .app(let platform)? = origins["\(send.project)/\(app)"] else {
                    skip(.unknownApp)
                    continue
                }
                resolution.targets.append(DeliveryTarget(
                    id: installation.id, address: token, installationID: installation.id, app: app, platform: platform,
                    environment: installation.environment))
            }
            return resolution
        case .email, .sms:
            let channel = send.channel == .email ? contact.email : contact.sms
            let name = send.channel.rawValue
            guard let address = channel.address else { return Resolution(targets: [], skipped: [(name, nil, .noAddress)]) }
            // On the suppression list: never sent to, transactional or not, whatever the profile's subscription says.
            if suppressions?.contains(project: send.project, channel: send.channel, address: address) == true {
                return Resolution(targets: [], skipped: [(address, nil, .suppressedAddress)])
            }
            if send.channel == .email && (channel.bouncedAt != nil || feedback.bouncedAddresses.contains(address)) {
                return Resolution(targets: [], skipped: [(address, nil, .bounced)])
            }
            if send.marketing {
                let state = channel.marketing(local: feedback.marketing[name])
                guard state == "subscribed" else {
                    return Resolution(targets: [], skipped: [(address, nil, state == nil ? .notSubscribed : .unsubscribed)])
                }
            }
            return Resolution(targets: [DeliveryTarget(id: address, address: address)], skipped: [])
        case .webhook:
            return Resolution(targets: [], skipped: [])  // resolved above
        }
    }
}
