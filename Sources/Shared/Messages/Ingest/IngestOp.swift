import Foundation

/// What one record on `herald.ingest` does.
package enum IngestOp: String, Sendable, CaseIterable {
    case profileUpdate = "profile_update"
    case event
    case identify
    case logout
    case installation
    case pushToken = "push_token"
    case location
    case optOut = "opt_out"
    case optIn = "opt_in"
    case wipe
    case profileDelete = "profile_delete"
    /// A server's API trigger of a campaign for one recipient (`campaign`, `trigger_properties`).
    case campaignTrigger = "campaign_trigger"
    /// A server's API entry of a journey for one recipient (`journey`, `entry_properties`).
    case journeyTrigger = "journey_trigger"
    /// A purchase (`purchase`: product, currency, price, quantity, revenue in USD, properties), counted as `quantity`
    /// purchases (braze-rules §3.2).
    case purchase
    /// An alias (the envelope's `alias`) for the profile `custom_id` (Braze's `/users/alias/new` and
    /// `/users/identify`): claimed at the alias's key, where an alias-only profile merges into it; without a custom ID,
    /// creates the alias-only profile.
    case alias
    /// A transactional push (`POST /v1/sends/push`, `push`: the notification, its payload, the app) to the
    /// installation of the envelope, or to the raw token of the envelope (`device_token`, keyed by the token's key).
    case pushSend = "push_send"
    /// An app's session started or ended (`session`: kind, session id, client time, duration).
    case session
    /// An app's user opened a notification or pressed one of its buttons (`push_open`: send id, action, client time).
    case pushOpen = "push_open"
    /// An app showed an in-app message, or its user clicked or dismissed it (`in_app`: action, message, button, time).
    case inApp = "in_app"
    /// An app showed a content card, or its user opened or dismissed it (`content_card`: action, card id, time).
    case contentCard = "content_card"
    /// An app's device entered or left a geofence (`geofence`: kind, set, geofence, time).
    case geofence

    // Written by the orchestrator itself (source "orchestrator"), to move identity state between the partitions of
    // the keys involved (docs/orchestrator.md, Identity). The ingest never accepts them.
    /// To an installation's home key: link it to a profile (`target_custom_id`, `merge`).
    case installLink = "install_link"
    /// To an installation's home key: forget a link to a deleted profile.
    case installUnlink = "install_unlink"
    /// To a profile: give the installation back (it moves through its home key to wherever its link points).
    case installDetach = "install_detach"
    /// Carries an installation's state (and, on a first identification, the anonymous history) to its new holder.
    case installMove = "install_move"
    /// To a profile: forget the installation without moving it (it was wiped).
    case installDrop = "install_drop"
    /// To a token's key (`<project>/token/<token>`): the token now belongs to this profile and installation.
    case tokenClaim = "token_claim"
    /// To the token's previous owner: the token moved elsewhere.
    case tokenRelease = "token_release"
    /// To an alias's key: the alias belongs to `target_custom_id` (first claim wins); `merge` as for `install_link`.
    case aliasClaim = "alias_claim"
    /// To a profile: its claim of the alias was refused (another profile holds it).
    case aliasRefused = "alias_refused"
    /// To an alias's key: the profile `target_custom_id` gave the alias up (deleted, or another name for the label).
    case aliasUnlink = "alias_unlink"
    /// To a profile: an alias-only profile's history (`merge`), when the alias is identified.
    case aliasMove = "alias_move"
    /// To a profile a journey walks through an `update` node: the node's edit (`profile`), then the instance
    /// (`journey`, `entry_id`, `node`) goes on.
    case journeyUpdate = "journey_update"

    /// The ops whose records name an alias (the client's `alias`, and the orchestrator's moves).
    package static let aliasOps: Set<IngestOp> = [.alias, .aliasClaim, .aliasRefused, .aliasUnlink, .aliasMove]

    /// The ops only an app writes (`POST /v1/app/activity`): what it reports about its own use.
    package static let appOnlyOps: Set<IngestOp> = [.session, .pushOpen, .inApp, .contentCard, .geofence]

    /// The ops only the orchestrator writes.
    package static let internalOps: Set<IngestOp> = [
        .installLink, .installUnlink, .installDetach, .installMove, .installDrop, .tokenClaim, .tokenRelease, .aliasClaim,
        .aliasRefused, .aliasUnlink, .aliasMove, .journeyUpdate,
    ]
}

/// Where a write came from.
package enum IngestSource: Sendable, Equatable {
    case server
    case app(id: String, dev: Bool)
    /// The orchestrator's own records (identity moves, forwarded writes keep their original source).
    case orchestrator

    package var isApp: Bool { if case .app = self { true } else { false } }
}
