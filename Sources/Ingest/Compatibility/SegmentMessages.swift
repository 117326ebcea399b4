import Foundation
import Hummingbird
import ServiceSupport
import Shared

/// Segment messages as Herald's writes (docs/ingest.md, "Segment"):
///
/// | type | becomes |
/// |---|---|
/// | `identify` | a profile update with the traits (`SegmentTraits`) |
/// | `track` | an event (name and property names mapped); `Order Completed` with `products` one purchase per product |
/// | `page`, `screen` | an event `PAGE_VIEWED` / `SCREEN_VIEWED` with `name`, `category` and the properties |
/// | `group` | the group id added to the `groups` array attribute |
/// | `alias` | `previousId` (an anonymous id) identified as `userId` |
///
/// A message with an `anonymousId` is written as the source's (its anonymous id installation-like: an anonymous profile
/// at first, joined to the user's profile by the first message that names both); one with only a `userId` as a
/// server's.
struct SegmentMessages {
    let api: IngestAPI
    let project: AppsCatalog.Project
    let source: AppsCatalog.Source
    let request: Request
    let context: IngestContext
    var values = LenientValues()
    var records: [IngestRecord] = []

    init(api: IngestAPI, project: AppsCatalog.Project, source: AppsCatalog.Source, request: Request, context: IngestContext) {
        self.api = api
        self.project = project
        self.source = source
        self.request = request
        self.context = context
    }

    /// Who a message is about, and the write's id.
    struct Envelope {
        var customID: String?
        var anonymousID: String?
        var id: String?
        var time: Date?
    }

    mutating func map(_ message: JSONValue, type fixed: String?, path: String, batchContext: JSONValue?) {
        let prefix = path.isEmpty ? "" : "\(path)."
        guard case .object(let members) = message else {
            values.drop(path, "invalid_type", "a message is an object")
            return
        }
        for member in members where !SegmentController.messageFields.contains(member.key) {
            values.adjust("\(prefix)\(member.key)", "ignored_field", "not a field of Segment's messages")
        }
        guard let type = fixed ?? message["type"]?.stringValue, SegmentController.types.contains(type) else {
            values.drop("\(prefix)type", "invalid_type", "type is one of \(SegmentController.types.joined(separator: ", "))")
            return
        }
        let envelope: Envelope
        do throws(Violation) {
            envelope = try self.envelope(message, type: type)
        } catch {
            values.drop(path.isEmpty ? "userId" : path, error.code, error.message)
            return
        }
        let context = message["context"] ?? batchContext
        switch type {
        case "identify":
            let edit = SegmentTraits.edit(
                traits: message["traits"] ?? context?["traits"], context: context, identified: envelope.customID != nil,
                contactFields: source.contactFields,
                path: path.isEmpty ? "" : path, values: &values)
            append(.profileUpdate(ProfileUpdate(profile: edit)), envelope)
        case "track":
            guard case .string(let name)? = message["event"], let kept = values.string(name, path: "\(prefix)event") else {
                if !(message["event"]?.stringValue?.isEmpty ?? false) {
                    values.drop("\(prefix)event", "missing_field", "a track call needs an event name (a string)")
                }
                return
            }
            if let products = LenientValues.orderProducts(event: kept, properties: message["properties"]) {
                orderCompleted(message, products: products, envelope, path: prefix)
                return
            }
            event(values.name(kept, as: .event, path: "\(prefix)event"), properties: message["properties"], envelope, path: prefix)
        case "page", "screen":
            var properties = message["properties"] ?? .object([])
            if case .object(var members) = properties {
                for field in ["category", "name"] {
                    if case .string(let text)? = message[field] { members.insert(JSONMember(field, .string(text)), at: 0) }
                }
                properties = .object(members)
            }
            event(type == "page" ? "PAGE_VIEWED" : "SCREEN_VIEWED", properties: properties, envelope, path: prefix)
        case "group":
            guard let group = Self.idText(message["groupId"]), let kept = values.string(group, path: "\(prefix)groupId") else {
                values.drop("\(prefix)groupId", "missing_field", "a group call needs a groupId")
                return
            }
            var edit = ProfileEditBuilder()
            edit.setAttribute("groups", .arrayEdit(add: [kept], remove: []))
            append(.profileUpdate(ProfileUpdate(profile: edit.edit)), envelope)
        default:  // alias
            guard let previous = Self.idText(message["previousId"]), (try? Rules.installationID(previous)) != nil else {
                values.drop("\(prefix)previousId", "invalid_previous_id", "previousId is the anonymous id to identify (1 to 128 visible ASCII characters)")
                return
            }
            guard envelope.customID != nil else {
                values.drop("\(prefix)userId", "missing_field", "an alias call names the userId the previous id becomes")
                return
            }
            var identified = envelope
            identified.anonymousID = previous
            append(.identify, identified)
        }
    }

    /// `userId` and `anonymousId` (strings, or numbers as their text), `messageId`, `timestamp`. With signed identity
    /// (the default), a `userId` comes with its proof, `integrations.Herald.custom_id_auth` (Segment's place for a
    /// destination's options, which every library passes through): a website's write key is public.
    func envelope(_ message: JSONValue, type: String) throws(Violation) -> Envelope {
        var envelope = Envelope()
        if let user = Self.idText(message["userId"]) {
            let customID = try Rules.customID(user)
            if source.requireSignedIdentity {
                guard case .string(let proof)? = message["integrations"]?["Herald"]?["custom_id_auth"], !proof.isEmpty else {
                    throw Violation(
                        "missing_custom_id_auth",
                        "this source writes a userId only with its proof in integrations.Herald.custom_id_auth (signed identity)")
                }
                guard CustomIDProof.verify(proof, apiKey: source.writeKey, customID: customID, secrets: source.identitySecrets) else {
                    throw Violation("invalid_custom_id_auth", "integrations.Herald.custom_id_auth does not match this userId and write key")
                }
            }
            envelope.customID = customID
        }
        if let anonymous = Self.idText(message["anonymousId"]) {
            do {
                envelope.anonymousID = try Rules.installationID(anonymous)
            } catch {
                throw Violation("invalid_anonymous_id", "anonymousId is 1 to 128 visible ASCII characters")
            }
        }
        guard envelope.customID != nil || envelope.anonymousID != nil || type == "alias" else {
            throw Violation("missing_identifier", "userId or anonymousId is required")
        }
        if case .string(let id)? = message["messageId"], (try? Rules.clientID(id)) != nil { envelope.id = id }
        for field in ["timestamp", "originalTimestamp"] {
            if envelope.time == nil, case .string(let text)? = message[field] { envelope.time = Rules.parseTime(text) }
        }
        return envelope
    }

    static func idText(_ value: JSONValue?) -> String? {
        switch value {
        case .string(let text)? where !text.isEmpty: text
        case .number(let literal)?: literal
        default: nil
        }
    }

    mutating func event(_ name: String, properties: JSONValue?, _ envelope: Envelope, path: String) {
        let attributes = properties.map { values.properties($0, path: "\(path)properties") } ?? []
        let event = ValidatedEvent(name: name, time: envelope.time, attributes: attributes)
        append(.event(event), envelope)
    }

    /// `Order Completed` with products: one purchase per product (`LenientValues.orderPurchases`), ids `<messageId>`,
    /// `<messageId>#1`, … by the product's place in the order.
    mutating func orderCompleted(_ message: JSONValue, products: [JSONValue], _ envelope: Envelope, path: String) {
        let purchases = values.orderPurchases(
            message["properties"] ?? .object([]), products: products, time: envelope.time, rates: project.usdRates,
            path: "\(path)properties")
        for (index, purchase) in purchases {
            var suffixed = envelope
            suffixed.id = envelope.id.map { index == 0 ? $0 : "\($0)#\(index)" }
            append(.purchase(purchase), suffixed)
        }
    }

    mutating func append(_ payload: IngestPayload, _ envelope: Envelope) {
        let source: IngestSource = envelope.anonymousID == nil ? .server : .app(id: self.source.id, dev: false)
        var record = IngestRecord(
            payload,
            id: api.recordID(client: envelope.id, op: payload.op, request: request, context: context, index: records.count),
            project: project.id, source: source, customID: envelope.customID, installationID: envelope.anonymousID,
            receivedAt: api.now())
        record.unsigned = self.source.requireSignedIdentity && envelope.customID == nil
        // A source whose users sign their writes has a public key (a website's): what it says is theirs to say.
        record.publicKey = self.source.requireSignedIdentity && source == .server
        records.append(record)
    }
}
