import Foundation
import Hummingbird
import Shared

/// The server-side trigger API (project REST key): `POST /v1/campaigns/trigger` sends an API-triggered campaign,
/// `POST /v1/journeys/trigger` enters recipients into a journey whose entry is `api: true`. Both take the same body
/// (the id, call-wide properties, up to 50 recipients each with its own) and write one record per recipient, keyed by
/// its profile: the orchestrator decides (a recipient's properties override the call's).
struct TriggerController {
    let api: IngestAPI

    func register(on router: Router<IngestContext>) {
        router.post("v1/campaigns/trigger") { request, context in try await trigger(.campaign, request, context: context) }
        router.post("v1/journeys/trigger") { request, context in try await trigger(.journey, request, context: context) }
    }

    /// The most recipients of one API trigger call (Braze's limit for API-triggered campaigns and Canvases).
    static let maxRecipients = 50
    /// The most properties a trigger carries, and the longest property name.
    static let maxProperties = 50
    static let maxPropertyName = 128

    /// What each endpoint's body names, and the record it writes.
    private struct Shape {
        /// `campaign_id`, `journey_id`.
        var idField: String
        /// `trigger_properties` (templates read `trigger.…`), `entry_properties` (`entry.…`).
        var propertiesField: String
        var payload: @Sendable (_ id: String, _ properties: [JSONMember]) -> IngestPayload

        init(_ kind: TriggerDirectory.Kind) {
            switch kind {
            case .campaign:
                (idField, propertiesField) = ("campaign_id", "trigger_properties")
                payload = { .campaignTrigger(CampaignTrigger(campaign: $0, properties: $1)) }
            case .journey:
                (idField, propertiesField) = ("journey_id", "entry_properties")
                payload = { .journeyTrigger(JourneyTrigger(journey: $0, properties: $1)) }
            }
        }
    }

    /// `{"<id field>", "<properties field>"?, "recipients": [{"custom_id", "<properties field>"?, "id"?}]}`.
    private func trigger(_ kind: TriggerDirectory.Kind, _ request: Request, context: IngestContext) async throws -> Response {
        guard case .rest(let project) = try api.authenticate(request, as: .rest) else { throw APIError.validation([]) }
        let shape = Shape(kind)
        let body = try await api.body(request, context: context)
        let fields = Fields(body, path: "", known: [shape.idField, shape.propertiesField, "recipients"])
        guard fields.isObject else {
            throw APIError.badRequest("invalid_body", "the body is an object with \(shape.idField) and recipients")
        }
        var problems: [Problem] = []
        let id: String
        do throws(Violation) {
            guard case .string(let text)? = fields[shape.idField] else { throw Violation("missing_field", "\(shape.idField) is required (a string)") }
            guard !text.isEmpty, text.unicodeScalars.count <= 128 else { throw Violation("invalid_value", "\(shape.idField) has 1 to 128 characters") }
            id = text
        } catch {
            throw APIError.validation(fields.problems + [error.at(shape.idField)])
        }
        let shared = fields[shape.propertiesField].map { Self.properties($0, path: shape.propertiesField, problems: &problems) } ?? [:]
        // The call's own properties go to every recipient: any problem there refuses the call.
        guard problems.isEmpty else { throw APIError.validation(fields.problems + problems) }
        guard case .array(let recipients)? = fields["recipients"], !recipients.isEmpty else {
            throw APIError.validation(fields.problems + problems + [Violation("missing_field", "recipients is a non-empty array").at("recipients")])
        }
        guard recipients.count <= Self.maxRecipients else {
            throw APIError.badRequest("too_many_recipients", "at most \(Self.maxRecipients) recipients per call (got \(recipients.count))")
        }
        var records: [IngestRecord] = []
        let receivedAt = api.now()
        for (index, recipient) in recipients.enumerated() {
            let path = "recipients[\(index)]"
            var item = Fields(recipient, path: path, known: ["custom_id", shape.propertiesField, "id"])
            defer { problems += item.problems }
            guard item.isObject else { continue }
            let customID: String
            let clientID: String?
            do throws(Violation) {
                guard case .string(let text)? = item["custom_id"] else { throw Violation("missing_field", "custom_id is required (a string)") }
                customID = try Rules.customID(text)
            } catch {
                item.report(error.at("\(path).custom_id"))
                continue
            }
            do {
                clientID = try item.string("id", Rules.clientID)
            } catch {
                item.report(error.at("\(path).id"))
                continue
            }
            var merged = shared
            if let own = item[shape.propertiesField] {
                let before = problems.count
                let properties = Self.properties(own, path: "\(path).\(shape.propertiesField)", problems: &problems)
                guard problems.count == before else { continue }
                merged.merge(properties) { $1 }
            }
            let payload = shape.payload(id, merged.keys.sorted().map { JSONMember($0, merged[$0]!) })
            records.append(
                IngestRecord(
                    payload, id: api.recordID(client: clientID, op: payload.op, request: request, context: context, index: index),
                    project: project, source: .server, customID: customID, installationID: nil, receivedAt: receivedAt))
        }
        problems = fields.problems + problems
        // Checked after the body's own checks: a request its body refuses (no valid recipient, or any problem under
        // strict handling) is answered as such, whatever it names.
        return try await api.store(records, problems: problems, context: context) {
            try Self.check(api.triggers.answer(kind, project: project, id: id), kind, id: id, project: project, field: shape.idField)
        }
    }

    /// A trigger the orchestrator could only dead-letter is refused: 404 for a campaign (journey) the project does not
    /// have, 422 for one triggered (entered) otherwise, 409 for a disabled one; 503 until the configuration has been
    /// read whole at start.
    static func check(
        _ answer: TriggerDirectory.Answer, _ kind: TriggerDirectory.Kind, id: String, project: String, field: String
    ) throws(APIError) {
        let noun = kind == .campaign ? "campaign" : "journey"
        switch answer {
        case .triggerable: return
        case .loading:
            throw APIError(
                status: .serviceUnavailable, code: "configuration_loading",
                message: "the ingest is still reading the configuration (herald.config); retry in a second",
                headers: [.retryAfter: "1"])
        case .unknown:
            throw APIError(
                status: .notFound, code: "unknown_\(noun)",
                message: "project \(project) has no \(noun) \(id) (herald config apply publishes \(noun)s)",
                details: ProblemList([Violation("unknown_\(noun)", "no \(noun) \(id) in project \(project)").at(field)]))
        case .notAPITriggered:
            let how = kind == .campaign ? "triggered by the API (its trigger is not `api: true`)" : "entered by the API (its entry is not `api: true`)"
            throw APIError.validation([Violation("not_api_triggered", "\(noun) \(id) is not \(how)").at(field)])
        case .disabled:
            throw APIError(
                status: .conflict, code: "\(noun)_disabled", message: "\(noun) \(id) is disabled (enabled: false)",
                details: ProblemList([Violation("\(noun)_disabled", "\(noun) \(id) is disabled").at(field)]))
        }
    }

    /// Flat properties: at most 50, names of 1 to 128 characters, values strings, numbers or booleans.
    static func properties(_ value: JSONValue, path: String, problems: inout [Problem]) -> [String: JSONValue] {
        guard case .object(let members) = value else {
            problems.append(Violation("invalid_type", "\(path.split(separator: ".").last.map(String.init) ?? path) is an object").at(path))
            return [:]
        }
        guard members.count <= maxProperties else {
            problems.append(Violation("too_many_properties", "at most \(maxProperties) properties (got \(members.count))").at(path))
            return [:]
        }
        var properties: [String: JSONValue] = [:]
        for member in members {
            guard !member.key.isEmpty, member.key.unicodeScalars.count <= maxPropertyName else {
                problems.append(Violation("invalid_name", "a property name has 1 to \(maxPropertyName) characters").at("\(path).\(member.key)"))
                continue
            }
            switch member.value {
            case .string, .number, .bool: properties[member.key] = member.value
            default:
                problems.append(Violation("invalid_type", "a property is a string, a number or a boolean").at("\(path).\(member.key)"))
            }
        }
        return properties
    }
}
