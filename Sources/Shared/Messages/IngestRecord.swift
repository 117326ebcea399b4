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

    /// The ops only the orchestrator writes.
    package static let internalOps: Set<IngestOp> = [
        .installLink, .installUnlink, .installDetach, .installMove, .installDrop, .tokenClaim, .tokenRelease,
    ]
}

/// Where a write came from.
package enum IngestSource: Sendable, Equatable {
    case server
    case app(id: String, dev: Bool)
    /// The orchestrator's own records (identity moves, forwarded writes keep their original source).
    case orchestrator
}

/// One validated write on `herald.ingest` (format version 1, documented in docs/ingest.md):
/// `{"v":1,"kind":"ingest","op":…,"id":…,"project":…,"source":"server"|"app","app":…,"dev":…,"custom_id":…,
///   "installation_id":…,"received_at":…, <op fields>}`.
package struct IngestRecord: Sendable, Equatable {
    package static let version = 1

    package var op: IngestOp
    /// The client's id, or one the server assigned; replays of an id are dropped downstream.
    package var id: String
    package var project: String
    package var source: IngestSource
    package var customID: String?
    package var installationID: String?
    package var receivedAt: Date
    /// The op's own fields (`profile`, `events`, `event`, `installation`, `push`, `location`).
    package var fields: [JSONMember]

    package init(
        op: IngestOp, id: String, project: String, source: IngestSource, customID: String?, installationID: String?,
        receivedAt: Date, fields: [JSONMember] = []
    ) {
        self.op = op
        self.id = id
        self.project = project
        self.source = source
        self.customID = customID
        self.installationID = installationID
        self.receivedAt = receivedAt
        self.fields = fields
    }

    /// The profile key of the design: `<project>/<custom_id>` once identified, else `<project>/install/<installation_id>`.
    /// An identify is keyed by its custom ID, so that it is ordered with the profile's other writes.
    package var key: String {
        ProfileKey.of(project, customID: customID, installationID: installationID)
    }

    package var json: JSONValue {
        var members: [JSONMember] = [
            JSONMember("v", .number(String(Self.version))), JSONMember("kind", .string("ingest")),
            JSONMember("op", .string(op.rawValue)), JSONMember("id", .string(id)),
            JSONMember("project", .string(project)),
        ]
        switch source {
        case .server:
            members.append(JSONMember("source", .string("server")))
        case .app(let app, let dev):
            members.append(JSONMember("source", .string("app")))
            members.append(JSONMember("app", .string(app)))
            members.append(JSONMember("dev", .bool(dev)))
        case .orchestrator:
            members.append(JSONMember("source", .string("orchestrator")))
        }
        if let customID { members.append(JSONMember("custom_id", .string(customID))) }
        if let installationID { members.append(JSONMember("installation_id", .string(installationID))) }
        members.append(JSONMember("received_at", .string(WireTime.format(receivedAt))))
        return .object(members + fields)
    }

    package var value: [UInt8] { json.serialized }
}
