import Foundation
import Hummingbird
import Shared

/// The server-side API (project REST key): profile updates and deletion.
struct ServerController {
    let api: IngestAPI

    func register(on router: Router<IngestContext>) {
        router.post("v1/profiles/update") { request, context in try await update(request, context: context) }
        router.delete("v1/profiles/:custom_id") { request, context in try await delete(request, context: context) }
        router.post("v1/campaigns/trigger") { request, context in try await trigger(request, context: context) }
    }

    /// The most recipients of one API trigger call (Braze's limit for API-triggered campaigns).
    static let maxRecipients = 50
    /// The most properties a trigger carries, and the longest property name.
    static let maxProperties = 50
    static let maxPropertyName = 128

    /// `POST /v1/campaigns/trigger {"campaign_id", "trigger_properties"?, "recipients": [{"custom_id",
    /// "trigger_properties"?, "id"?}]}`: one record per recipient, keyed by its profile; the orchestrator decides and
    /// renders (a recipient's properties override the call's). Properties are flat: strings, numbers, booleans.
    func trigger(_ request: Request, context: IngestContext) async throws -> Response {
        guard case .rest(let project) = try api.authenticate(request, as: .rest) else { throw APIError.validation([]) }
        let body = try await api.body(request, context: context)
        let fields = Fields(body, path: "", known: ["campaign_id", "trigger_properties", "recipients"])
        guard fields.isObject else { throw APIError.badRequest("invalid_body", "the body is an object with campaign_id and recipients") }
        var problems: [Problem] = []
        let campaign: String
        do throws(Violation) {
            guard case .string(let text)? = fields["campaign_id"] else { throw Violation("missing_field", "campaign_id is required (a string)") }
            guard !text.isEmpty, text.unicodeScalars.count <= 128 else { throw Violation("invalid_value", "campaign_id has 1 to 128 characters") }
            campaign = text
        } catch {
            throw APIError.validation(fields.problems + [error.at("campaign_id")])
        }
        let shared = fields["trigger_properties"].map { Self.properties($0, path: "trigger_properties", problems: &problems) } ?? [:]
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
            var item = Fields(recipient, path: path, known: ["custom_id", "trigger_properties", "id"])
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
            if let own = item["trigger_properties"] {
                let before = problems.count
                let properties = Self.properties(own, path: "\(path).trigger_properties", problems: &problems)
                guard problems.count == before else { continue }
                merged.merge(properties) { $1 }
            }
            records.append(
                IngestRecord(
                    .campaignTrigger(
                        CampaignTrigger(campaign: campaign, properties: merged.keys.sorted().map { JSONMember($0, merged[$0]!) })),
                    id: api.recordID(client: clientID, op: .campaignTrigger, request: request, context: context, index: index),
                    project: project, source: .server, customID: customID, installationID: nil, receivedAt: receivedAt))
        }
        problems = fields.problems + problems
        // Checked after the body's own checks: a request its body refuses (no valid recipient, or any problem under
        // strict handling) is answered as such, whatever campaign it names.
        return try await api.store(records, problems: problems, context: context) {
            try Self.check(api.campaigns.answer(project: project, campaign: campaign), campaign: campaign, project: project)
        }
    }

    /// A trigger the orchestrator could only dead-letter is refused: 404 for a campaign the project does not have, 422
    /// for one triggered otherwise, 409 for a disabled one; 503 until the configuration has been read whole at start.
    static func check(_ answer: CampaignDirectory.Answer, campaign: String, project: String) throws(APIError) {
        switch answer {
        case .triggerable: return
        case .loading:
            throw APIError(
                status: .serviceUnavailable, code: "configuration_loading",
                message: "the ingest is still reading the configuration (herald.config); retry in a second",
                headers: [.retryAfter: "1"])
        case .unknown:
            throw APIError(
                status: .notFound, code: "unknown_campaign",
                message: "project \(project) has no campaign \(campaign) (herald config apply publishes campaigns)",
                details: ProblemList([Violation("unknown_campaign", "no campaign \(campaign) in project \(project)").at("campaign_id")]))
        case .notAPITriggered:
            throw APIError.validation([
                Violation("not_api_triggered", "campaign \(campaign) is not triggered by the API (its trigger is not `api: true`)").at("campaign_id")
            ])
        case .disabled:
            throw APIError(
                status: .conflict, code: "campaign_disabled", message: "campaign \(campaign) is disabled (enabled: false)",
                details: ProblemList([Violation("campaign_disabled", "campaign \(campaign) is disabled").at("campaign_id")]))
        }
    }

    /// Flat trigger properties: at most 50, names of 1 to 128 characters, values strings, numbers or booleans.
    static func properties(_ value: JSONValue, path: String, problems: inout [Problem]) -> [String: JSONValue] {
        guard case .object(let members) = value else {
            problems.append(Violation("invalid_type", "trigger_properties is an object").at(path))
            return [:]
        }
        guard members.count <= maxProperties else {
            problems.append(Violation("too_many_properties", "at most \(maxProperties) trigger properties (got \(members.count))").at(path))
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
                problems.append(Violation("invalid_type", "a trigger property is a string, a number or a boolean").at("\(path).\(member.key)"))
            }
        }
        return properties
    }

    /// `POST /v1/profiles/update`: an array of up to 200 `{"identifiers":{"custom_id":…},"attributes":{…},"events":[…]}`.
    /// Each update becomes one record; invalid operations and events are dropped and reported, the rest stored.
    func update(_ request: Request, context: IngestContext) async throws -> Response {
        guard case .rest(let project) = try api.authenticate(request, as: .rest) else { throw APIError.validation([]) }
        guard case .array(let updates) = try await api.body(request, context: context) else {
            throw APIError.badRequest("invalid_body", "the body is an array of profile updates")
        }
        guard updates.count <= Limits.profileUpdatesPerRequest else {
            throw APIError.badRequest(
                "too_many_updates", "at most \(Limits.profileUpdatesPerRequest) updates per request (got \(updates.count))")
        }
        var records: [IngestRecord] = []
        var problems = ProblemList()
        let receivedAt = api.now()
        for (index, update) in updates.enumerated() {
            let path = "[\(index)]"
            var fields = Fields(update, path: path, known: ["identifiers", "attributes", "events", "id"])
            defer { problems += fields.problems }
            guard fields.isObject else { continue }
            let customID: String
            do throws(Violation) {
                let identifiers = Fields(fields["identifiers"] ?? .null, path: "\(path).identifiers", known: ["custom_id"])
                guard identifiers.isObject else { throw Violation("missing_field", "identifiers.custom_id is required") }
                problems += identifiers.problems
                guard case .string(let text)? = identifiers["custom_id"] else {
                    throw Violation("missing_field", "identifiers.custom_id is required (a string)")
                }
                customID = try Rules.customID(text)
            } catch {
                fields.report(error.at("\(path).identifiers.custom_id"))
                continue
            }
            let clientID: String?
            do {
                clientID = try fields.string("id", Rules.clientID)
            } catch {
                fields.report(error.at("\(path).id"))
                continue
            }
            var update = ProfileUpdate(profile: nil)
            let problemsBefore = problems.count
            if let attributes = fields["attributes"] {
                let (edit, editProblems) = ProfileValidation.validate(attributes, path: "\(path).attributes", identified: true)
                problems += editProblems
                if !edit.isEmpty { update.profile = edit }
            }
            if let events = fields["events"] {
                let valid = validateEvents(events, path: "\(path).events", problems: &problems)
                if !valid.isEmpty { update.events = valid }
            }
            guard update.profile != nil || update.events != nil else {
                // Nothing to write and nothing wrong (`"attributes": {}`, `"events": []`) is a problem too: the update
                // would vanish without a word.
                if problems.count == problemsBefore && fields.problems.isEmpty {
                    fields.report(Violation("empty_update", "an update needs at least one attribute or one event").at(path))
                }
                continue
            }
            records.append(
                IngestRecord(
                    .profileUpdate(update),
                    id: api.recordID(client: clientID, op: .profileUpdate, request: request, context: context, index: index),
                    project: project, source: .server, customID: customID, installationID: nil, receivedAt: receivedAt))
        }
        return try await api.store(records, problems: problems, context: context)
    }

    /// `DELETE /v1/profiles/{custom_id}[?do_not_contact=true]`: erases the profile from every store of the services, with
    /// a receipt on `herald.erasures` (docs/data-rights.md); `do_not_contact`: its email address and phone number go on
    /// the project's suppression list.
    func delete(_ request: Request, context: IngestContext) async throws -> Response {
        guard case .rest(let project) = try api.authenticate(request, as: .rest) else { throw APIError.validation([]) }
        let raw = context.parameters.get("custom_id") ?? ""
        let customID: String
        do {
            customID = try Rules.customID(raw.removingPercentEncoding ?? raw)
        } catch {
            throw APIError.validation([error.at("custom_id")])
        }
        let doNotContact: Bool
        switch request.uri.queryParameters.get("do_not_contact") {
        case nil, "false": doNotContact = false
        case "true": doNotContact = true
        case let other?: throw APIError.validation([Violation("invalid_type", "do_not_contact is true or false, not \"\(other)\"").at("do_not_contact")])
        }
        let record = IngestRecord(
            .profileDelete(doNotContact: doNotContact),
            id: api.recordID(client: nil, op: .profileDelete, request: request, context: context, index: 0),
            project: project, source: .server, customID: customID, installationID: nil, receivedAt: api.now())
        return try await api.store([record], problems: [], context: context)
    }
}

/// Validates an array of events; returns the valid ones and reports the others (each with all its problems).
func validateEvents(_ value: JSONValue, path: String, problems: inout ProblemList) -> [ValidatedEvent] {
    guard case .array(let items) = value else {
        problems.append(Violation("invalid_type", "events is an array").at(path))
        return []
    }
    guard items.count <= Limits.eventsPerRequest else {
        problems.append(Violation("too_many_events", "at most \(Limits.eventsPerRequest) events (got \(items.count))").at(path))
        return []
    }
    var valid: [ValidatedEvent] = []
    for (index, item) in items.enumerated() {
        switch EventValidation.validate(item, path: "\(path)[\(index)]") {
        case .valid(let event): valid.append(event)
        case .invalid(let eventProblems): problems += eventProblems
        }
    }
    return valid
}
