import Foundation
import GRDB
import PartitionStore
import Shared

/// Where a write applies (docs/orchestrator.md, Identity): here, as a plan, or re-produced to another key.
enum Route: Equatable {
    /// Applied here, once (a replayed id is a no-op).
    case apply(Plan)
    /// Re-produced to the profile `customID` (nil: back to the installation's or the alias's home): the installation or
    /// the alias belongs to another profile, or left this one since the write was forwarded here.
    case forward(to: String?)
    /// Not applied, and dead-lettered with the reason: an unsigned write would reach a profile through a linked
    /// installation (docs/security.md).
    case refuse(reason: String)

    /// What applying the write here means.
    enum Plan: Equatable {
        /// The op, at `write.profileKey`; first joining the app's installation to the profile when `attach` (an app
        /// that names its user is identified). `optedOut`: the installation's opt-out, when the router read it.
        case op(attach: Bool = false, optedOut: Bool? = nil)
        /// At the installation's home: logout, or wipe.
        case logoutAtHome
        case wipeAtHome
        /// An identified app wiped its installation.
        case wipeAtProfile
        /// One of the orchestrator's own records (identity moves, token and alias claims).
        case internalRecord
        /// A transactional push (`push_send`), written as a send request keyed by `key`.
        case transactionalPush(key: String)
        /// Braze's `/users/alias/new` without an external id: the alias-only profile, unless a profile holds the alias.
        case aliasOnlyProfile(held: Bool)
        /// Braze's alias for a profile: claimed at the alias's home.
        case aliasClaim
    }
}

/// Decides where a write applies: here, forwarded to the profile that holds its installation or alias, or back to their
/// home. Every move of an installation or an alias goes through its home, whose records to any one key are produced in
/// order; writes that name only an installation or an alias reach the home and follow its link.
struct WriteRouter {
    let db: Database
    let write: Write

    func route() throws -> Route {
        let write = self.write
        if write.isInternal {
            // A move reaching the home of an installation that is linked follows the link.
            if write.op == .installMove, write.customID == nil, let installationID = write.installationID,
                let linked = try InstallationLinksTable(db).link(project: write.project, installationID: installationID)?.customID
            {
                return .forward(to: linked)
            }
            return .apply(.internalRecord)
        }
        if write.op == .pushSend { return try routePushSend() }
        if write.isApp, let installationID = write.installationID {
            if write.customID == nil {
                // At the installation's home.
                let linked = try InstallationLinksTable(db).link(project: write.project, installationID: installationID)?.customID
                if let linked, write.ingest.unsigned, write.op != .optOut {
                    // Without a proof, an app key writes only anonymous data: never a named profile's, nor its link.
                    // An opt-out goes through: it only stops sends to the device that asks.
                    return .refuse(reason: "unsigned_write_to_identified_profile: \(write.op.rawValue) names only an installation that belongs to a user, and carries no proof of that user (X-CustomID-Auth)")
                }
                switch write.op {
                case .logout: return .apply(.logoutAtHome)
                case .wipe: return .apply(.wipeAtHome)
                default:
                    if let linked { return .forward(to: linked) }
                }
            } else if write.op != .identify {
                // One read for both questions: is the installation in this profile, and is it opted out.
                let optedOut = try InstallationsTable(db).optedOut(write.profileKey, installationID)
                let attached = optedOut != nil
                // Forwarded here, but the installation left this profile since: back to its home.
                if !attached && write.forwarded { return .forward(to: nil) }
                if write.op == .wipe { return .apply(.wipeAtProfile) }
                return .apply(.op(attach: !attached, optedOut: optedOut))
            }
        }
        if let alias = write.alias { return try routeAliasWrite(alias) }
        return .apply(.op())
    }

    /// A client's write that names an alias: at the alias's home (no custom ID) it follows the alias to the profile
    /// holding it, or applies to the alias-only profile; at a profile (`alias` op, or a forwarded write) it claims the
    /// alias or applies if the profile still holds it.
    private func routeAliasWrite(_ alias: UserAlias) throws -> Route {
        if write.customID == nil {
            let holder = try AliasLinksTable(db).holder(project: write.project, alias)
            if write.op == .alias { return .apply(.aliasOnlyProfile(held: holder != nil)) }
            if let holder { return .forward(to: holder) }
            return .apply(.op())
        }
        if write.op == .alias { return .apply(.aliasClaim) }
        if write.forwarded, try ProfileAliasesTable(db).name(write.profileKey, label: alias.label) != alias.name {
            // Forwarded here, but this profile no longer holds the alias: back to its home.
            return .forward(to: nil)
        }
        return .apply(.op())
    }

    /// A transactional push goes where its installation is: its home while it is anonymous, else the profile its link
    /// names (and back to the home if the installation left the profile meanwhile), so that the send names the
    /// profile's contact revision and the notifier finds the token there. To a raw token, it is sent from its key.
    private func routePushSend() throws -> Route {
        if write.ingest.deviceToken != nil { return .apply(.transactionalPush(key: write.record.keyString ?? write.ingest.key)) }
        guard let installationID = write.installationID else { return .apply(.op()) }
        if write.customID == nil {
            if let linked = try InstallationLinksTable(db).link(project: write.project, installationID: installationID)?.customID {
                return .forward(to: linked)
            }
        } else if try !InstallationsTable(db).holds(write.profileKey, installationID) {
            return .forward(to: nil)
        }
        return .apply(.transactionalPush(key: write.profileKey))
    }
}
