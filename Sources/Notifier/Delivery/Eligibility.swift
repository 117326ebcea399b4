import Foundation
import Shared

/// Who a send reaches, decided from the contact state at the moment of the attempt (not of the decision).
enum Eligibility {
    struct Resolution: Sendable, Equatable {
        var targets: [DeliveryTarget]
        /// Targets left out, each with the reason (push: per installation of the app).
        var skipped: [(id: String, installationID: String?, reason: String)]

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
    static func resolve(
        _ send: SendRequest, contact: Contact?, feedback: LocalFeedback, origins: [String: Origin]
    ) -> Resolution {
        if send.channel == .push, let raw = send.token {
            guard case .app(let platform)? = origins["\(send.project)/\(raw.app)"] else {
                return Resolution(targets: [], skipped: [("token", nil, "unknown_app")])
            }
            guard !feedback.invalidTokens.contains(raw.token) else { return Resolution(targets: [], skipped: [("token", nil, "token_invalid")]) }
            return Resolution(
                targets: [DeliveryTarget(id: "token", address: raw.token, app: raw.app, platform: platform, environment: raw.environment)],
                skipped: [])
        }
        guard let contact else { return Resolution(targets: [], skipped: [(send.channel.rawValue, nil, "no_contact")]) }
        switch send.channel {
        case .push:
            var resolution = Resolution(targets: [], skipped: [])
            let installations = contact.installations.filter {
                (send.app == nil || $0.app == send.app) && (send.installationID == nil || $0.id == send.installationID)
                    && origins["\(send.project)/\($0.app ?? "")"] != .segmentSource
            }
            if installations.isEmpty { resolution.skipped.append(("push", nil, "no_installation")) }
            for installation in installations {
                let skip = { (reason: String) in resolution.skipped.append((installation.id, installation.id, reason)) }
                guard !installation.optedOut else { skip("opted_out"); continue }
                guard let token = installation.token else { skip("no_token"); continue }
                guard !feedback.invalidTokens.contains(token) else { skip("token_invalid"); continue }
                guard NotificationPermission.displaying.contains(installation.notificationPermission ?? "") else {
                    skip("notifications_not_allowed")
                    continue
                }
                guard let app = installation.app, case .app(let platform)? = origins["\(send.project)/\(app)"] else {
                    skip("unknown_app")
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
            guard let address = channel.address else { return Resolution(targets: [], skipped: [(name, nil, "no_address")]) }
            if send.channel == .email && (channel.bouncedAt != nil || feedback.bouncedAddresses.contains(address)) {
                return Resolution(targets: [], skipped: [(address, nil, "bounced")])
            }
            if send.marketing {
                let state = channel.marketing(local: feedback.marketing[name])
                guard state == "subscribed" else {
                    return Resolution(targets: [], skipped: [(address, nil, state == nil ? "not_subscribed" : "unsubscribed")])
                }
            }
            return Resolution(targets: [DeliveryTarget(id: address, address: address)], skipped: [])
        }
    }
}
