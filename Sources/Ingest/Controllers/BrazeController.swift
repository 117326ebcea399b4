import Foundation
import HTTPTypes
import Hummingbird
import Shared

/// Braze's user data endpoints, for projects with `"compatibility": "braze"` (docs/ingest.md, "Compatibility"):
/// `/users/track`, `/users/identify`, `/users/alias/new` and `/users/delete`, with the REST key as
/// `Authorization: Bearer`, Braze's request and response shapes and Braze's rules (braze-rules §2–3, §13). A team
/// moving from Braze points its integration (braze-client, its own HTTP calls) at Herald and changes nothing else.
struct BrazeController {
    let api: IngestAPI

    /// Braze's limit on each array of `/users/track`, and on the objects of the alias and delete endpoints.
    static let maxTrackObjects = 75
    static let maxAliasObjects = 50
    /// Alias names and labels: 1 to 255 characters, as Braze's other strings.
    static let maxAliasText = 255

    func register(on router: Router<IngestContext>) {
        let users = router.group("users")
        users.post("track") { request, context in try await braze { try await track(request, context: context) } }
        users.post("identify") { request, context in try await braze { try await identify(request, context: context) } }
        users.post("alias/new") { request, context in try await braze { try await newAliases(request, context: context) } }
        users.post("delete") { request, context in try await braze { try await delete(request, context: context) } }
    }

    /// Errors in Braze's shape.
    func braze(_ handler: () async throws -> Response) async throws -> Response {
        do {
            return try await handler()
        } catch let error as APIError {
            throw error.in(.braze)
        }
    }

    /// The project of the REST key, which must use Braze's rules.
    func project(_ request: Request) throws -> AppsCatalog.Project {
        guard case .rest(let id) = try api.authenticate(request, as: .rest), let project = api.catalog.project(id) else {
            throw APIError.unauthorized("invalid_credentials", "unknown API key")
        }
        guard project.compatibility == .braze else {
            throw APIError(
                status: .forbidden, code: "compatibility_off",
                message: "project \(project.id) does not take Braze's API: set \"compatibility\": \"braze\" in the apps file")
        }
        return project
    }

    /// The object of the body, with its arrays.
    func body(_ request: Request, context: IngestContext, arrays: [String], limit: Int) async throws
        -> (arrays: [String: [JSONValue]], problems: [Problem])
    {
        let body = try await api.body(request, context: context)
        let fields = Fields(body, path: "", known: Set(arrays))
        guard fields.isObject else { throw APIError.badRequest("invalid_body", "the body is a JSON object") }
        var result: [String: [JSONValue]] = [:]
        for name in arrays {
            switch fields[name] {
            case nil, .null?: continue
            case .array(let items)?:
                guard items.count <= limit else {
                    throw APIError.badRequest("too_many_objects", "\(name) holds at most \(limit) objects (got \(items.count))")
                }
                result[name] = items
            case let other?:
                throw APIError.badRequest("invalid_body", "\(name) is an array, got \(other.typeName)")
            }
        }
        return (result, fields.problems)
    }

    // MARK: Who an object is about

    /// The user an object names: `external_id` (a custom ID) or `user_alias` (`{"alias_name", "alias_label"}`), and
    /// whether it only updates an existing user (`_update_existing_only`: false by default with `external_id`, true
    /// with `user_alias`, as Braze does).
    struct Target {
        var customID: String?
        var alias: UserAlias?
        var updateExistingOnly: Bool
    }

    static let identifierFields: Set<String> = ["external_id", "user_alias", "braze_id", "_update_existing_only", "app_id"]

    static func target(_ object: JSONValue, path: String, aliasAllowed: Bool = true) throws(Violation) -> Target {
        if object["braze_id"] != nil {
            throw Violation("unsupported_identifier", "braze_id is Braze's own id; name the user by external_id or user_alias")
        }
        var target = Target(updateExistingOnly: false)
        switch (object["external_id"], object["user_alias"]) {
        case (nil, nil):
            throw Violation("missing_identifier", "'external_id' or 'user_alias' is required")
        case (.string(let text)?, nil):
            target.customID = try Rules.customID(text)
        case (nil, let alias?) where aliasAllowed:
            target.alias = try userAlias(alias)
            target.updateExistingOnly = true
        case (nil, _?):
            throw Violation("invalid_identifier", "this endpoint names users by external_id")
        case (_?, nil):
            throw Violation("invalid_type", "external_id is a string")
        case (_?, _?):
            throw Violation("invalid_identifier", "name the user by external_id or by user_alias, not both")
        }
        switch object["_update_existing_only"] {
        case nil: break
        case .bool(let flag)?: target.updateExistingOnly = flag
        default: throw Violation("invalid_type", "_update_existing_only is a boolean")
        }
        return target
    }

    /// `{"alias_name": …, "alias_label": …}`: both 1 to 255 characters.
    static func userAlias(_ value: JSONValue) throws(Violation) -> UserAlias {
        guard case .object = value, case .string(let name)? = value["alias_name"], case .string(let label)? = value["alias_label"]
        else {
            throw Violation("invalid_alias", "user_alias is {\"alias_name\": …, \"alias_label\": …} with two strings")
        }
        for text in [name, label] {
            guard !text.isEmpty, text.unicodeScalars.count <= maxAliasText, !text.hasLineBreak else {
                throw Violation("invalid_alias", "alias names and labels are 1 to \(maxAliasText) characters on one line")
            }
        }
        return UserAlias(label: label, name: name)
    }

    func record(
        _ payload: IngestPayload, target: Target, project: String, request: Request, context: IngestContext, index: Int
    ) -> IngestRecord {
        var record = IngestRecord(
            payload, id: api.recordID(client: nil, op: payload.op, request: request, context: context, index: index),
            project: project, source: .server, customID: target.customID, installationID: nil, receivedAt: api.now(),
            alias: target.alias)
        record.updateExistingOnly = target.updateExistingOnly
        return record
    }

    // MARK: /users/track

    /// `POST /users/track {"attributes": […], "events": […], "purchases": […]}`, at most 75 objects each: one record per
    /// valid object; what cannot be kept is listed in `errors`, what was kept changed in `adjusted`.
    func track(_ request: Request, context: IngestContext) async throws -> Response {
        let project = try project(request)
        let (arrays, topProblems) = try await body(
            request, context: context, arrays: ["attributes", "events", "purchases"], limit: Self.maxTrackObjects)
        var values = LenientValues()
        values.reservesBrazeKeys = true
        values.problems = ProblemList(topProblems)
        var records: [IngestRecord] = []
        var counts: [String: Int] = [:]
        func add(_ payload: IngestPayload, _ target: Target) {
            records.append(record(payload, target: target, project: project.id, request: request, context: context, index: records.count))
        }
        for (index, object) in (arrays["attributes"] ?? []).enumerated() {
            guard let (target, edit) = attributes(object, path: "attributes[\(index)]", values: &values) else { continue }
            add(.profileUpdate(ProfileUpdate(profile: edit)), target)
            counts["attributes", default: 0] += 1
        }
        for (index, object) in (arrays["events"] ?? []).enumerated() {
            let path = "events[\(index)]"
            if case .string(let name)? = object["name"], let products = LenientValues.orderProducts(event: name, properties: object["properties"]) {
                // An e-commerce `Order Completed` with its products: purchases, as from Segment.
                guard let (target, time) = timedTarget(object, path: path, values: &values) else { continue }
                let purchases = values.orderPurchases(
                    object["properties"] ?? .object([]), products: products, time: time, rates: project.usdRates, path: "\(path).properties")
                for (_, purchase) in purchases { add(.purchase(purchase), target) }
                if !purchases.isEmpty { counts["events", default: 0] += 1 }
                continue
            }
            guard let (target, event) = event(object, path: path, values: &values) else { continue }
            add(.event(event), target)
            counts["events", default: 0] += 1
        }
        for (index, object) in (arrays["purchases"] ?? []).enumerated() {
            guard let (target, purchase) = purchase(object, path: "purchases[\(index)]", rates: project.usdRates, values: &values)
            else { continue }
            add(.purchase(purchase), target)
            counts["purchases", default: 0] += 1
        }
        IngestMetrics.adjusted(values.adjusted)
        try await api.persist(records, problems: values.problems, context: context)
        var members: [JSONMember] = [JSONMember("message", .string("success"))]
        for name in ["attributes", "events", "purchases"] where arrays[name] != nil {
            members.append(JSONMember("\(name)_processed", .number(String(counts[name] ?? 0))))
        }
        members += Self.report(values)
        return IngestAPI.json(.object(members), status: .created)
    }

    /// `errors` (dropped) and `adjusted` (kept changed), when there are any.
    static func report(_ values: LenientValues) -> [JSONMember] {
        var members: [JSONMember] = []
        if !values.problems.isEmpty {
            members.append(JSONMember("errors", .array(values.problems.kept.map(APIError.brazeError))))
        }
        if !values.adjusted.isEmpty {
            members.append(JSONMember("adjusted", values.adjusted.reported.list))
        }
        return members
    }

    /// An attributes object as a profile edit (Braze's names, docs/ingest.md "Braze attributes").
    func attributes(_ object: JSONValue, path: String, values: inout LenientValues) -> (Target, ProfileEdit)? {
        guard case .object(let members) = object else {
            values.drop(path, "invalid_type", "an attributes object is an object")
            return nil
        }
        let target: Target
        do {
            target = try Self.target(object, path: path)
        } catch {
            values.drop(path, error.code, error.message)
            return nil
        }
        var edit = ProfileEditBuilder()
        let problemsBefore = values.problems.count
        for member in members where !Self.identifierFields.contains(member.key) {
            let memberPath = "\(path).\(member.key)"
            if let native = BrazeAttributes.natives[member.key] {
                do {
                    let (name, value) = try ProfileValidation.native(native, BrazeAttributes.nativeValue(member.key, member.value), identified: true)
                    edit.setNative(name, value)
                } catch {
                    values.drop(memberPath, error.code, error.message)
                }
                continue
            }
            if let reason = BrazeAttributes.unsupported[member.key] {
                values.drop(memberPath, "unsupported_attribute", reason)
                continue
            }
            if member.key.hasPrefix("$") {
                values.drop(memberPath, "reserved_name", "attribute names cannot start with '$'")
                continue
            }
            var key = member.key
            if key.unicodeScalars.count > LenientValues.maxString {
                values.adjust(memberPath, "name_truncated", "attribute names are cut to \(LenientValues.maxString) characters")
                key = String(String.UnicodeScalarView(key.unicodeScalars.prefix(LenientValues.maxString)))
            }
            let name = values.name(key, as: .attribute, path: memberPath)
            let value = member.key == "dob" ? BrazeAttributes.dateOfBirth(member.value) : member.value
            guard let operation = values.attributeEdit(value, path: memberPath) else { continue }
            edit.setAttribute(name, operation)
        }
        let built = edit.edit
        guard !built.isEmpty else {
            if values.problems.count == problemsBefore {
                values.drop(path, "empty_update", "an attributes object needs at least one attribute besides its identifier")
            }
            return nil
        }
        return (target, built)
    }

    /// An event: `name` (cut to 255 characters, then mapped), `time` (required, ISO 8601), `properties`.
    func event(_ object: JSONValue, path: String, values: inout LenientValues) -> (Target, ValidatedEvent)? {
        guard let (fields, target, time, properties) = timed(object, path: path, known: ["name"], kind: "an event", values: &values)
        else { return nil }
        guard case .string(let rawName)? = fields["name"], let kept = values.string(rawName, path: "\(path).name") else {
            if fields["name"].map({ if case .string = $0 { false } else { true } }) ?? true {
                values.drop("\(path).name", "missing_field", "an event needs a name (a string)")
            }
            return nil
        }
        let name = values.name(kept, as: .event, path: "\(path).name")
        return (target, ValidatedEvent(name: name, time: time, attributes: properties))
    }

    /// A purchase: `product_id`, `currency`, `price`, `quantity` (1 to 100, default 1), `time` (required), `properties`.
    func purchase(_ object: JSONValue, path: String, rates: [String: Double], values: inout LenientValues) -> (Target, Purchase)? {
        guard let (fields, target, time, properties) = timed(
            object, path: path, known: ["product_id", "currency", "price", "quantity"], kind: "a purchase", values: &values)
        else { return nil }
        guard let purchase = values.purchase(
            productID: fields["product_id"], currency: fields["currency"], price: fields["price"], quantity: fields["quantity"],
            time: time, properties: properties, rates: rates, path: path)
        else { return nil }
        return (target, purchase)
    }

    /// What events and purchases share: their fields (`known`, the identifiers, `time` and `properties`; others are
    /// ignored and listed in `adjusted`), who they are about, their required time and their properties.
    func timed(
        _ object: JSONValue, path: String, known: Set<String>, kind: String, values: inout LenientValues
    ) -> (fields: Fields, target: Target, time: Date, properties: [(String, AttributeValue)])? {
        let fields = Fields(object, path: path, known: Self.identifierFields.union(known).union(["time", "properties"]))
        guard fields.isObject else {
            values.drop(path, "invalid_type", "\(kind) is an object")
            return nil
        }
        values.adjusted += fields.problems.map { Problem(path: $0.path, code: "ignored_field", message: "ignored: \($0.message)") }
        guard let (target, time) = timedTarget(object, path: path, values: &values) else { return nil }
        let properties = fields["properties"].map { values.properties($0, path: "\(path).properties") } ?? []
        return (fields, target, time, properties)
    }

    /// Who an event or a purchase is about, and its required time.
    func timedTarget(_ object: JSONValue, path: String, values: inout LenientValues) -> (target: Target, time: Date)? {
        do throws(Violation) {
            return (try Self.target(object, path: path), try Self.time(object["time"]))
        } catch {
            values.drop(path, error.code, error.message)
            return nil
        }
    }

    /// Braze requires an event's and a purchase's `time`: ISO 8601 with a zone (`2013-07-16T19:20:30+01:00`,
    /// `2016-12-14T13:32:31.601-0800`).
    static func time(_ value: JSONValue?) throws(Violation) -> Date {
        guard case .string(let text)? = value else { throw Violation("missing_field", "time is required (an ISO 8601 date-time)") }
        guard let date = Rules.parseTime(text) else {
            throw Violation("invalid_time", "time is ISO 8601 with a time zone, e.g. 2013-07-16T19:20:30+01:00")
        }
        return date
    }

    // MARK: Aliases and deletion

    /// `POST /users/identify {"aliases_to_identify": [{"external_id", "user_alias"}]}`: the alias-only user merges into
    /// the identified one (braze-rules §1.2: only if the external id had no profile yet).
    func identify(_ request: Request, context: IngestContext) async throws -> Response {
        try await aliases(request, context: context, array: "aliases_to_identify") { object throws(Violation) in
            guard case .string(let text)? = object["external_id"] else { throw Violation("missing_field", "external_id is required (a string)") }
            let customID = try Rules.customID(text)
            guard let alias = object["user_alias"] else { throw Violation("missing_field", "user_alias is required") }
            return (customID, try Self.userAlias(alias))
        }
    }

    /// `POST /users/alias/new {"user_aliases": [{"external_id"?, "alias_name", "alias_label"}]}`: an alias for an
    /// identified user, or (without `external_id`) a new alias-only user.
    func newAliases(_ request: Request, context: IngestContext) async throws -> Response {
        try await aliases(request, context: context, array: "user_aliases") { object throws(Violation) in
            let alias = try Self.userAlias(object)
            switch object["external_id"] {
            case nil, .null?: return (nil, alias)
            case .string(let text)?: return (try Rules.customID(text), alias)
            default: throw Violation("invalid_type", "external_id is a string")
            }
        }
    }

    /// One `alias` record per object of `array` that `read` takes (a custom ID, or none for an alias-only user, and the
    /// alias); `{"message": "success", "aliases_processed": n}`.
    func aliases(
        _ request: Request, context: IngestContext, array: String,
        read: (JSONValue) throws(Violation) -> (customID: String?, alias: UserAlias)
    ) async throws -> Response {
        let project = try project(request)
        let (arrays, problems) = try await body(request, context: context, arrays: [array], limit: Self.maxAliasObjects)
        var values = LenientValues()
        values.problems = ProblemList(problems)
        var records: [IngestRecord] = []
        for (index, object) in (arrays[array] ?? []).enumerated() {
            do throws(Violation) {
                let (customID, alias) = try read(object)
                records.append(
                    record(.alias, target: Target(customID: customID, alias: alias, updateExistingOnly: false), project: project.id,
                        request: request, context: context, index: index))
            } catch {
                values.drop("\(array)[\(index)]", error.code, error.message)
            }
        }
        try await api.persist(records, problems: values.problems, context: context)
        return IngestAPI.json(
            .object([JSONMember("message", .string("success")), JSONMember("aliases_processed", .number(String(records.count)))]
                + Self.report(values)), status: .created)
    }

    /// `POST /users/delete {"external_ids": […], "user_aliases": […]}`: the users and everything keyed by them.
    func delete(_ request: Request, context: IngestContext) async throws -> Response {
        let project = try project(request)
        let (arrays, problems) = try await body(
            request, context: context, arrays: ["external_ids", "user_aliases", "braze_ids"], limit: Self.maxAliasObjects)
        var values = LenientValues()
        values.problems = ProblemList(problems)
        if arrays["braze_ids"] != nil {
            values.drop("braze_ids", "unsupported_identifier", "braze_id is Braze's own id; name users by external_ids or user_aliases")
        }
        var targets: [Target] = []
        for (index, value) in (arrays["external_ids"] ?? []).enumerated() {
            do throws(Violation) {
                guard case .string(let text) = value else { throw Violation("invalid_type", "external ids are strings") }
                targets.append(Target(customID: try Rules.customID(text), updateExistingOnly: false))
            } catch {
                values.drop("external_ids[\(index)]", error.code, error.message)
            }
        }
        for (index, value) in (arrays["user_aliases"] ?? []).enumerated() {
            do throws(Violation) {
                targets.append(Target(alias: try Self.userAlias(value), updateExistingOnly: false))
            } catch {
                values.drop("user_aliases[\(index)]", error.code, error.message)
            }
        }
        let records = targets.enumerated().map { index, target in
            record(.profileDelete(doNotContact: false), target: target, project: project.id, request: request, context: context, index: index)
        }
        try await api.persist(records, problems: values.problems, context: context)
        return IngestAPI.json(
            .object([JSONMember("message", .string("success")), JSONMember("deleted", .number(String(records.count)))]
                + Self.report(values)), status: .accepted)
    }
}
