import Foundation

/// One validated write on `herald.ingest` (format version 1, documented in docs/ingest.md): an envelope and the op's
/// typed payload, written and read here (golden bytes in `IngestRecordGoldenTests`).
///
/// `{"v":1,"kind":"ingest","op":…,"id":…,"project":…,"source":"server"|"app"|"orchestrator","app":…,"dev":…,
///   "custom_id":…,"installation_id":…,"alias":…,"device_token":…,"received_at":…, <the op's fields>,
///   "update_existing_only":…, "unsigned":…, "public_key":…, "forwarded":…,"hops":…}`
package struct IngestRecord: Sendable, Equatable {
    package static let version = 1

    /// What the write does, with its fields.
    package var payload: IngestPayload
    /// The client's id, or one the server assigned; replays of an id are dropped downstream.
    package var id: String
    package var project: String
    package var source: IngestSource
    package var customID: String?
    package var installationID: String?
    /// A write that names its profile by a Braze alias (and no custom ID) is keyed by the alias.
    package var alias: UserAlias?
    /// A transactional push to a raw device token is keyed by the token (`<project>/token/<token>`).
    package var deviceToken: String?
    package var receivedAt: Date
    /// Braze's `_update_existing_only`: the write changes a profile that exists, and never creates one.
    package var updateExistingOnly = false
    /// An app's (or a Segment source's) write that names no proven custom ID although its app requires signed identity:
    /// it may change only anonymous data, never a profile it reaches through a linked installation (docs/security.md).
    /// Written only when true, so that records from before it, and from apps that accept unsigned identities, keep
    /// their meaning.
    package var unsigned = false
    /// A write that came through a key shipped in apps or web pages although its source is `server`: a Segment source
    /// whose users sign their writes (what it says is the client's to say, like an app's). Written only when true.
    package var publicKey = false
    /// Set on a write the orchestrator re-produced to another key (identity routing), with the number of times it did.
    package var forwarded = false
    package var hops = 0

    package init(
        _ payload: IngestPayload, id: String, project: String, source: IngestSource, customID: String?,
        installationID: String?, receivedAt: Date, alias: UserAlias? = nil
    ) {
        self.payload = payload
        self.id = id
        self.project = project
        self.source = source
        self.customID = customID
        self.installationID = installationID
        self.receivedAt = receivedAt
        self.alias = alias
    }

    package var op: IngestOp { payload.op }

    /// Written by the customer's servers (a REST key, a Segment source whose key stays on servers) or by the
    /// orchestrator itself: not what a key shipped in apps or web pages says.
    package var fromServer: Bool {
        switch source {
        case .server: !publicKey
        case .orchestrator: true
        case .app: false
        }
    }

    /// The profile key of the design: `<project>/<custom_id>` once identified, else the alias's key, else a raw push
    /// token's key, else `<project>/install/<installation_id>`. An identify is keyed by its custom ID, so that it is
    /// ordered with the profile's other writes.
    package var key: String {
        if customID == nil, alias == nil, let deviceToken { return ProfileKey.token(project, deviceToken) }
        return ProfileKey.of(project, customID: customID, alias: alias, installationID: installationID)
    }

    /// The Kafka headers it is produced with: its op, and the ingest request that carried it (nil: none, or not
    /// known).
    package func headers(requestID: String?) -> [KafkaHeader] {
        var headers = [KafkaHeader(HeraldHeader.op, op.rawValue)]
        if let requestID { headers.append(KafkaHeader(HeraldHeader.requestID, requestID)) }
        return headers
    }

    /// The record's bytes, written straight from its typed fields (no tree between: this runs once per accepted write).
    package var value: [UInt8] {
        var writer = JSONWriter(capacity: 512)
        writer.openObject()
        writer.key("v")
        writer.number(String(Self.version))
        writer.member("kind", "ingest")
        writer.member("op", op.rawValue)
        writer.member("id", id)
        writer.member("project", project)
        switch source {
        case .server:
            writer.member("source", "server")
        case .app(let app, let dev):
            writer.member("source", "app")
            writer.member("app", app)
            writer.key("dev")
            writer.bool(dev)
        case .orchestrator:
            writer.member("source", "orchestrator")
        }
        if let customID { writer.member("custom_id", customID) }
        if let installationID { writer.member("installation_id", installationID) }
        if let alias { writer.member("alias", alias.json) }
        if let deviceToken { writer.member("device_token", deviceToken) }
        writer.member("received_at", WireTime.format(receivedAt))
        payload.write(into: &writer)
        if updateExistingOnly { writer.member("update_existing_only", .bool(true)) }
        if unsigned { writer.member("unsigned", .bool(true)) }
        if publicKey { writer.member("public_key", .bool(true)) }
        if forwarded {
            writer.member("forwarded", .bool(true))
            writer.key("hops")
            writer.number(String(hops))
        }
        writer.closeObject()
        return writer.bytes
    }

    /// The envelope's members; every other member is one of the op's fields.
    static let envelope: Set<String> = [
        "v", "kind", "op", "id", "project", "source", "app", "dev", "custom_id", "installation_id", "alias",
        "device_token", "received_at", "update_existing_only", "unsigned", "public_key", "forwarded", "hops",
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
        let payload = try IngestPayload(
            op: op, fields: WireObject(members: members.filter { !envelope.contains($0.key) }, path: ""))
        var record = IngestRecord(
            payload, id: id, project: project, source: source, customID: value["custom_id"]?.stringValue,
            installationID: value["installation_id"]?.stringValue, receivedAt: receivedAt,
            alias: try value["alias"].map { value throws(WireError) in try UserAlias(wire: value, path: "alias") })
        record.deviceToken = value["device_token"]?.stringValue
        record.updateExistingOnly = value["update_existing_only"] == .bool(true)
        record.unsigned = value["unsigned"] == .bool(true)
        record.publicKey = value["public_key"] == .bool(true)
        record.forwarded = value["forwarded"] == .bool(true)
        if case .number(let literal)? = value["hops"] { record.hops = Int(literal) ?? 0 }
        return record
    }
}
