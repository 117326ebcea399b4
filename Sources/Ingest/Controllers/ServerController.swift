import Foundation
import Hummingbird
import Shared

/// The server-side API (project REST key): profile updates and deletion (triggers: `TriggerController`).
struct ServerController {
    let api: IngestAPI

    func register(on router: Router<IngestContext>) {
        router.post("v1/profiles/update") { request, context in try await update(request, context: context) }
        router.delete("v1/profiles/:custom_id") { request, context in try await delete(request, context: context) }
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
