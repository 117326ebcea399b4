import Foundation
import HTTPTypes
import Hummingbird
import ServiceSupport
import Shared

/// The app-side API (`X-Api-Key`: an app's live or dev key). Every body names the installation; `custom_id` is the
/// user the app has identified, if any (email and phone need one).
struct AppController {
    let api: IngestAPI

    func register(on router: Router<IngestContext>) {
        let group = router.group("v1/app")
        group.post("identify") { request, context in try await identify(request, context: context) }
        group.post("profile") { request, context in try await profile(request, context: context) }
        group.post("events") { request, context in try await events(request, context: context) }
        group.post("installation") { request, context in try await installation(request, context: context) }
        group.post("push-token") { request, context in try await pushToken(request, context: context) }
        group.post("activity") { request, context in try await activity(request, context: context) }
        group.post("location") { request, context in try await location(request, context: context) }
        group.post("opt-out") { request, context in try await privacy(.optOut, request, context: context) }
        group.post("opt-in") { request, context in try await privacy(.optIn, request, context: context) }
        group.post("wipe") { request, context in try await privacy(.wipe(fromCustomID: nil), request, context: context) }
    }

    /// The parts every app request shares.
    struct Envelope {
        var project: String
        var source: IngestSource
        var platform: Platform
        var installationID: String
        var customID: String?
        var clientID: String?
        var fields: Fields
        /// Signed identity applies to the app (its default): a write without a proven custom ID may change only
        /// anonymous data (`IngestRecord.unsigned`).
        var requiresProof: Bool
        /// The secrets the app's proofs are made with.
        var identitySecrets: [String]
    }

    /// Authenticates, parses, and reads `installation_id`, `custom_id` and `id` next to the endpoint's `known` fields.
    /// A missing or invalid installation or custom ID fails the request (422): the write could not be routed.
    func envelope(_ request: Request, context: IngestContext, known: Set<String>) async throws -> Envelope {
        guard case .app(let project, let app, let dev) = try api.authenticate(request, as: .app) else {
            throw APIError.validation([])
        }
        let body = try await api.body(request, context: context)
        let fields = Fields(body, path: "", known: known.union(["installation_id", "custom_id", "id"]))
        guard fields.isObject else { throw APIError.badRequest("invalid_body", "the body is a JSON object") }
        var problems: [Problem] = []
        var installationID = ""
        var customID: String?
        var clientID: String?
        do throws(Violation) {
            guard case .string(let text)? = fields["installation_id"] else {
                throw Violation("missing_field", "installation_id is required (a string)")
            }
            installationID = try Rules.installationID(text)
        } catch {
            problems.append(error.at("installation_id"))
        }
        do {
            customID = try fields.string("custom_id", nullable: true, Rules.customID)
        } catch {
            problems.append(error.at("custom_id"))
        }
        do {
            clientID = try fields.string("id", Rules.clientID)
        } catch {
            problems.append(error.at("id"))
        }
        guard problems.isEmpty else { throw APIError.validation(problems + fields.problems) }
        // One device's writes, however many senders name it.
        try api.limiter?.take(.installation, "\(project)/\(installationID)")
        let settings = api.catalog.app(project: project, id: app)
        let requiresProof = settings?.requireSignedIdentity ?? true
        if let customID, requiresProof {
            try checkIdentityProof(request, customID: customID, secrets: settings?.identitySecrets ?? [])
        }
        let platform = settings?.platform ?? .ios
        return Envelope(
            project: project, source: .app(id: app, dev: dev), platform: platform, installationID: installationID,
            customID: customID, clientID: clientID, fields: fields, requiresProof: requiresProof,
            identitySecrets: settings?.identitySecrets ?? [])
    }

    /// Signed identity: a write that names `custom_id` carries `X-CustomID-Auth`, the proof the customer's server
    /// made for that custom ID under one of the app's identity secrets (`CustomIDProof`). Without it, anyone holding
    /// the app key (shipped in every copy of the app) could change another user's email or phone, or attach an
    /// installation to their profile and receive their pushes.
    func checkIdentityProof(_ request: Request, customID: String, secrets: [String]) throws(APIError) {
        do throws(AppAuthentication.Refusal) {
            try AppAuthentication.prove(customID, request, apiKey: request.headers[.apiKey] ?? "", secrets: secrets)
        } catch {
            throw APIError(status: error.status, code: error.code, message: error.message)
        }
    }

    func record(
        _ payload: IngestPayload, _ envelope: Envelope, request: Request, context: IngestContext, index: Int = 0, id: String? = nil,
        proven: Bool = false
    ) -> IngestRecord {
        var record = IngestRecord(
            payload, id: id ?? api.recordID(client: envelope.clientID, op: payload.op, request: request, context: context, index: index),
            project: envelope.project, source: envelope.source, customID: envelope.customID,
            installationID: envelope.installationID, receivedAt: api.now())
        record.unsigned = envelope.requiresProof && envelope.customID == nil && !proven
        return record
    }

    /// `POST /v1/app/identify {"installation_id", "custom_id": "…" | null, "from_custom_id"?}`: links the installation
    /// to a profile, or (null) logs it out. With signed identity, a logout names the user it logs out from
    /// (`from_custom_id`, with that user's `X-CustomID-Auth`): an installation linked to a profile is logged out only
    /// by that profile's proof, and only from that profile.
    func identify(_ request: Request, context: IngestContext) async throws -> Response {
        let envelope = try await envelope(request, context: context, known: ["from_custom_id"])
        guard envelope.fields["custom_id"] != nil else {
            throw APIError.validation([Violation("missing_field", "custom_id is required: a string, or null to log out").at("custom_id")])
        }
        guard envelope.customID == nil else {
            if envelope.fields["from_custom_id"] != nil {
                throw APIError.validation([Violation("unexpected_field", "from_custom_id goes with a logout (custom_id null)").at("from_custom_id")])
            }
            return try await api.store(
                [record(.identify, envelope, request: request, context: context)], problems: envelope.fields.problems, context: context)
        }
        let from: String?
        do throws(Violation) {
            from = try envelope.fields.string("from_custom_id", Rules.customID)
        } catch {
            throw APIError.validation([error.at("from_custom_id")])
        }
        if let from, envelope.requiresProof {
            try checkIdentityProof(request, customID: from, secrets: envelope.identitySecrets)
        }
        let record = record(.logout(fromCustomID: from), envelope, request: request, context: context, proven: from != nil)
        return try await api.store([record], problems: envelope.fields.problems, context: context)
    }

    /// `POST /v1/app/profile {"installation_id", "custom_id"?, "attributes": {…}}`: validated per operation.
    func profile(_ request: Request, context: IngestContext) async throws -> Response {
        let envelope = try await envelope(request, context: context, known: ["attributes"])
        var problems = envelope.fields.problems
        guard let attributes = envelope.fields["attributes"] else {
            throw APIError.validation([Violation("missing_field", "attributes is required").at("attributes")])
        }
        let (edit, editProblems) = ProfileValidation.validate(
            attributes, path: "attributes", identified: envelope.customID != nil)
        problems += editProblems
        let records = edit.isEmpty ? [] : [record(.profileUpdate(ProfileUpdate(profile: edit)), envelope, request: request, context: context)]
        return try await api.store(records, problems: problems, context: context)
    }

    /// `POST /v1/app/events {"installation_id", "custom_id"?, "events": [ … ]}`: one record per valid event; an
    /// invalid event is dropped whole and reported with all its problems.
    func events(_ request: Request, context: IngestContext) async throws -> Response {
        let envelope = try await envelope(request, context: context, known: ["events"])
        var problems = ProblemList(envelope.fields.problems)
        guard let events = envelope.fields["events"] else {
            throw APIError.validation([Violation("missing_field", "events is required").at("events")])
        }
        let valid = validateEvents(events, path: "events", problems: &problems)
        let records = valid.enumerated().map { index, event in
            record(
                .event(event), envelope, request: request, context: context,
                id: event.id ?? api.recordID(client: nil, op: .event, request: request, context: context, index: index))
        }
        return try await api.store(records, problems: problems, context: context)
    }

    /// `POST /v1/app/activity {"installation_id", "custom_id"?, "activity": [ … ]}`: what the app reports about its
    /// own use, client-timestamped and batched (sessions, notifications opened): one record per valid item, an invalid
    /// item dropped whole and reported. Each record's id is derived from what it reports (`ActivityItem.id`).
    func activity(_ request: Request, context: IngestContext) async throws -> Response {
        let envelope = try await envelope(request, context: context, known: ["activity"])
        var problems = ProblemList(envelope.fields.problems)
        guard let value = envelope.fields["activity"] else {
            throw APIError.validation([Violation("missing_field", "activity is required").at("activity")])
        }
        guard case .array(let items) = value else {
            throw APIError.validation([Violation("invalid_type", "activity is an array").at("activity")])
        }
        guard items.count <= Limits.activityPerRequest else {
            throw APIError.validation(
                [Violation("too_many_items", "at most \(Limits.activityPerRequest) items (got \(items.count))").at("activity")])
        }
        var records: [IngestRecord] = []
        let receivedAt = api.now()
        for (index, item) in items.enumerated() {
            let (valid, itemProblems) = ActivityItem.validate(item, path: "activity[\(index)]")
            problems += itemProblems
            if let valid {
                // The id from the time as sent (a replay is one report), the time held near the server's clock.
                let id = valid.id(installationID: envelope.installationID)
                records.append(record(valid.clamped(receivedAt: receivedAt).payload, envelope, request: request, context: context, id: id))
                // A tap whose action changes the profile: its writes, after the report, with ids derived from its id.
                if case .app(let app, _) = envelope.source, let place = ActionWrites.place(of: valid, app: app),
                    let action = api.actions.action(project: envelope.project, at: place)
                {
                    let (payloads, found) = action.payloads(identified: envelope.customID != nil, path: "activity[\(index)].action")
                    problems += found
                    for (number, payload) in payloads.enumerated() {
                        records.append(record(payload, envelope, request: request, context: context, id: "\(id):action:\(number)"))
                    }
                }
            }
        }
        return try await api.store(records, problems: problems, context: context)
    }

    static let permissions: Set<String> = ["allowed", "denied", "undecided", "provisional"]

    /// `POST /v1/app/installation`: what the SDK collects about the installation, each field validated on its own.
    func installation(_ request: Request, context: IngestContext) async throws -> Response {
        let known: Set<String> = [
            "app_version", "app_build", "os_version", "sdk_version", "device_brand", "device_model", "detected_language",
            "detected_region", "timezone", "notification_permission", "data_collection",
        ]
        let envelope = try await envelope(request, context: context, known: known)
        var problems = envelope.fields.problems
        var report = InstallationReport(dataCollection: [], fields: [])
        var deviceModelAllowed: Bool?
        if let collection = envelope.fields["data_collection"] {
            var flags = Fields(collection, path: "data_collection", known: ["geoip", "device_model"])
            for key in ["geoip", "device_model"] {
                switch flags[key] {
                case nil: break
                case .bool(let flag)?:
                    report.dataCollection.append(InstallationReport.Flag(key, flag))
                    if key == "device_model" { deviceModelAllowed = flag }
                case let other?:
                    flags.report(Violation("invalid_type", "\(key) is a boolean, got \(other.typeName)").at("data_collection.\(key)"))
                }
            }
            problems += flags.problems
        }
        for key in known.sorted() where key != "data_collection" {
            guard let value = envelope.fields[key] else { continue }
            do throws(Violation) {
                report.fields.append(
                    InstallationReport.Field(key, try installationField(key, value, deviceModelAllowed: deviceModelAllowed)))
            } catch {
                problems.append(error.at(key))
            }
        }
        let empty = report.dataCollection.isEmpty && report.fields.isEmpty
        let records = empty ? [] : [record(.installation(report), envelope, request: request, context: context)]
        return try await api.store(records, problems: problems, context: context)
    }

    /// A field's value (nil: erased).
    func installationField(_ key: String, _ value: JSONValue, deviceModelAllowed: Bool?) throws(Violation) -> String? {
        switch (key, value) {
        case ("device_model", .null):
            return nil  // collection turned off: erase the stored model
        case ("device_model", .string) where deviceModelAllowed == false:
            throw Violation("not_collected", "device_model is sent while data_collection.device_model is false")
        case ("detected_language", .string(let text)): return try Rules.language(text)
        case ("detected_region", .string(let text)): return try Rules.region(text)
        case ("timezone", .string(let text)): return try Rules.timeZone(text)
        case ("notification_permission", .string(let text)):
            guard Self.permissions.contains(text) else {
                throw Violation("invalid_value", "expected one of \(Self.permissions.sorted().joined(separator: ", "))")
            }
            return text
        case (_, .string(let text)):
            guard !text.isEmpty, text.unicodeScalars.count <= 100, !text.hasLineBreak else {
                throw Violation("invalid_value", "\(key) is 1 to 100 characters on one line")
            }
            return text
        default:
            throw Violation("invalid_type", "\(key) is a string, got \(value.typeName)")
        }
    }

    /// `POST /v1/app/push-token {"installation_id", "token", "environment": "sandbox"|"production"}`.
    /// iOS tokens are hexadecimal (stored lowercase); other platforms' are opaque.
    func pushToken(_ request: Request, context: IngestContext) async throws -> Response {
        let envelope = try await envelope(request, context: context, known: ["token", "environment"])
        var problems: [Problem] = []
        var token = ""
        var environment = PushEnvironment.production
        do throws(Violation) {
            guard case .string(let text)? = envelope.fields["token"] else {
                throw Violation("missing_field", "token is required (a string)")
            }
            token = try Rules.pushToken(text, platform: envelope.platform)
        } catch {
            problems.append(error.at("token"))
        }
        do throws(Violation) {
            guard case .string(let text)? = envelope.fields["environment"] else {
                throw Violation("invalid_environment", "environment is \"sandbox\" or \"production\"")
            }
            environment = try Rules.pushEnvironment(text)
        } catch {
            problems.append(error.at("environment"))
        }
        guard problems.isEmpty else { throw APIError.validation(problems + envelope.fields.problems) }
        let registration = PushTokenRegistration(token: token, environment: environment)
        return try await api.store(
            [record(.pushToken(registration), envelope, request: request, context: context)], problems: envelope.fields.problems,
            context: context)
    }

    /// `POST /v1/app/location {"installation_id", "latitude", "longitude", "accuracy"?, "time"?}`.
    func location(_ request: Request, context: IngestContext) async throws -> Response {
        let envelope = try await envelope(request, context: context, known: ["latitude", "longitude", "accuracy", "time"])
        var problems: [Problem] = []
        var numbers: [String: Double] = [:]
        for (key, range) in [("latitude", -90.0...90.0), ("longitude", -180.0...180.0), ("accuracy", 0.0...1e7)] {
            guard let value = envelope.fields[key] else {
                if key != "accuracy" { problems.append(Violation("missing_field", "\(key) is required").at(key)) }
                continue
            }
            guard case .number(let literal) = value, let number = Double(literal), range.contains(number) else {
                problems.append(
                    Violation("out_of_range", "\(key) is a number from \(range.lowerBound) to \(range.upperBound)").at(key))
                continue
            }
            numbers[key] = number
        }
        var time: Date?
        if let value = envelope.fields["time"] {
            do throws(Violation) {
                guard case .string(let text) = value else { throw Violation("invalid_type", "time is an ISO-8601 string") }
                time = try Rules.date(text)
            } catch {
                problems.append(error.at("time"))
            }
        }
        guard problems.isEmpty, let latitude = numbers["latitude"], let longitude = numbers["longitude"] else {
            throw APIError.validation(problems + envelope.fields.problems)
        }
        let location = LocationReport(latitude: latitude, longitude: longitude, accuracy: numbers["accuracy"], time: time)
        return try await api.store(
            [record(.location(location), envelope, request: request, context: context)], problems: envelope.fields.problems,
            context: context)
    }

    /// `POST /v1/app/opt-out`, `/opt-in`, `/wipe {"installation_id", "custom_id"?}`.
    func privacy(_ payload: IngestPayload, _ request: Request, context: IngestContext) async throws -> Response {
        let envelope = try await envelope(request, context: context, known: [])
        return try await api.store(
            [record(payload, envelope, request: request, context: context)], problems: envelope.fields.problems, context: context)
    }
}
