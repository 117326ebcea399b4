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

    /// The ops whose records name an alias (the client's `alias`, and the orchestrator's moves).
    package static let aliasOps: Set<IngestOp> = [.alias, .aliasClaim, .aliasRefused, .aliasUnlink, .aliasMove]

    /// The ops only the orchestrator writes.
    package static let internalOps: Set<IngestOp> = [
        .installLink, .installUnlink, .installDetach, .installMove, .installDrop, .tokenClaim, .tokenRelease, .aliasClaim,
        .aliasRefused, .aliasUnlink, .aliasMove,
    ]
}

/// Where a write came from.
package enum IngestSource: Sendable, Equatable {
    case server
    case app(id: String, dev: Bool)
    /// The orchestrator's own records (identity moves, forwarded writes keep their original source).
    case orchestrator
}

/// A Braze user alias: a name under a label (`{"alias_label": "crm", "alias_name": "42"}`); a label/name pair belongs
/// to one profile at most, and a profile has one name per label.
package struct UserAlias: Sendable, Equatable, Hashable {
    package var label: String
    package var name: String

    package init(label: String, name: String) {
        self.label = label
        self.name = name
    }

    var json: JSONValue { .object([JSONMember("label", .string(label)), JSONMember("name", .string(name))]) }

    static func read(_ value: JSONValue?) -> UserAlias? {
        guard let label = value?["label"]?.stringValue, let name = value?["name"]?.stringValue else { return nil }
        return UserAlias(label: label, name: name)
    }
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
    /// A write that names its profile by a Braze alias (and no custom ID) is keyed by the alias.
    package var alias: UserAlias?
    /// A transactional push to a raw device token is keyed by the token (`<project>/token/<token>`); `device_token` on
    /// the wire (the orchestrator's token records have a `token` field of their own).
    package var deviceToken: String?
    package var receivedAt: Date
    /// The op's own fields (`profile`, `events`, `event`, `installation`, `push`, `location`).
    package var fields: [JSONMember]
    /// Set on a write the orchestrator re-produced to another key (identity routing), with the number of times it did.
    package var forwarded = false
    package var hops = 0

    package init(
        op: IngestOp, id: String, project: String, source: IngestSource, customID: String?, installationID: String?,
        receivedAt: Date, fields: [JSONMember] = [], alias: UserAlias? = nil
    ) {
        self.alias = alias
        self.op = op
        self.id = id
        self.project = project
        self.source = source
        self.customID = customID
        self.installationID = installationID
        self.receivedAt = receivedAt
        self.fields = fields
    }

    /// The profile key of the design: `<project>/<custom_id>` once identified, else the alias's key, else a raw push
    /// token's key, else `<project>/install/<installation_id>`. An identify is keyed by its custom ID, so that it is
    /// ordered with the profile's other writes.
    package var key: String {
        if customID == nil, alias == nil, let deviceToken { return ProfileKey.token(project, deviceToken) }
        return ProfileKey.of(project, customID: customID, alias: alias, installationID: installationID)
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
        if let alias { members.append(JSONMember("alias", alias.json)) }
        if let deviceToken { members.append(JSONMember("device_token", .string(deviceToken))) }
        members.append(JSONMember("received_at", .string(WireTime.format(receivedAt))))
        members += fields
        if forwarded {
            members.append(JSONMember("forwarded", .bool(true)))
            members.append(JSONMember("hops", .number(String(hops))))
        }
        return .object(members)
    }

    package var value: [UInt8] { json.serialized }

    /// The envelope's members; every other member is one of the op's fields.
    static let envelope: Set<String> = [
        "v", "kind", "op", "id", "project", "source", "app", "dev", "custom_id", "installation_id", "alias",
        "device_token", "received_at", "forwarded", "hops",
    ]

    /// Reads a record value written by `value` (the ingest's, or the orchestrator's own).
    package static func read(_ bytes: [UInt8]) throws(WireError) -> IngestRecord {
        let value: JSONValue
        do {
            value = try JSONParser.parse(bytes)
        } catch {
            throw WireError(reason: "not JSON: \(error)")
        }
        guard case .object(let members) = value, case .string("ingest")? = value["kind"], case .number("1")? = value["v"]
        else {
            throw WireError(reason: "not an ingest record of format version 1")
        }
        guard case .string(let opName)? = value["op"], let op = IngestOp(rawValue: opName),
            case .string(let project)? = value["project"], case .string(let id)? = value["id"],
            case .string(let sourceName)? = value["source"],
            case .string(let receivedText)? = value["received_at"], let receivedAt = WireTime.parse(receivedText)
        else {
            throw WireError(reason: "missing op, project, id, source or received_at")
        }
        let source: IngestSource
        switch sourceName {
        case "server": source = .server
        case "orchestrator": source = .orchestrator
        case "app":
            guard let app = value["app"]?.stringValue else { throw WireError(reason: "an app write without app") }
            source = .app(id: app, dev: value["dev"] == .bool(true))
        default: throw WireError(reason: "unknown source \(sourceName)")
        }
        var record = IngestRecord(
            op: op, id: id, project: project, source: source, customID: value["custom_id"]?.stringValue,
            installationID: value["installation_id"]?.stringValue, receivedAt: receivedAt,
            fields: members.filter { !envelope.contains($0.key) }, alias: UserAlias.read(value["alias"]))
        record.deviceToken = value["device_token"]?.stringValue
        record.forwarded = value["forwarded"] == .bool(true)
        if case .number(let literal)? = value["hops"] { record.hops = Int(literal) ?? 0 }
        return record
    }
}
