import Foundation
import HTTPTypes
import Hummingbird
import OrchestratorDomain
import PartitionStore
import ServiceSupport
import Shared

/// What a read an app makes of its profile's state (in-app messages, content cards) found in this instance's
/// partitions.
enum AppRead<Answer: Sendable>: Sendable {
    case answer(Answer)
    /// No partition here holds the installation under that profile: an identify or logout not applied yet, another
    /// user's installation, or a partition of another instance.
    case notHeld
    /// The profile is here, but the app's write the request names is not applied yet.
    case writePending
    /// The configuration is not read yet.
    case notReady
    /// Another instance owns the profile's partition (or none does, during a rebalance).
    case notOwner(partition: Int32)
}

/// Where an app's reads are answered: this instance's partitions (`OrchestratorPartitions`), or a benchmark's database.
protocol AppReadSource: Sendable {
    /// `ifNoneMatch`: the request's `If-None-Match`, whose tags an answer with no body may match (`EntityTags`).
    func inAppMessages(key: String, installationID: String, after writeID: String?, ifNoneMatch: String?, now: Date) async throws
        -> AppRead<InAppEligibility.Answer>
    func contentCards(
        key: String, installationID: String, after writeID: String?, since cursor: ContentCardFeed.Cursor?, now: Date
    ) async throws -> AppRead<JSONValue>
    func geofences(key: String, installationID: String, app: String, after writeID: String?, ifNoneMatch: String?) async throws
        -> AppRead<GeofenceSync.Answer>
}

/// The reads an app makes of its profile's state on the orchestrator (docs/in-app.md), what they share: the app's key
/// (`X-Api-Key`) and, with `custom_id`, the user's proof (`X-CustomID-Auth`, as for the app's writes); the profile the
/// request names (the user's, or the installation's anonymous one), answered only while it holds the installation
/// (after an identify or a logout, the previous profile's answer is 409, never its content); `after`, the app's
/// latest write (an id the ingest returned), which the answer reflects or is 409 until it is applied; and a read of a
/// partition another instance owns sent on to that owner, once.
struct AppReads: Sendable {
    let manager: any AppReadSource
    let catalog: AppsCatalog?
    /// Who owns the other partitions: a read of a profile this instance does not hold goes there.
    let owners: PartitionDirectory?
    let instance: String

    func register(on router: some RouterMethods<ServiceRequestContext>) {
        router.get("v1/app/in-app-messages") { request, _ in
            try await read(request) { key, installationID, after, _ in
                try await manager.inAppMessages(
                    key: key, installationID: installationID, after: after, ifNoneMatch: request.headers[.ifNoneMatch], now: Date())
            } respond: { answer in
                InAppEndpoint.response(answer)
            }
        }
        router.get("v1/app/geofences") { request, _ in
            try await read(request) { key, installationID, after, app in
                try await manager.geofences(
                    key: key, installationID: installationID, app: app, after: after, ifNoneMatch: request.headers[.ifNoneMatch])
            } respond: { (answer: GeofenceSync.Answer) in
                Self.tagged(answer.json, etag: answer.etag)
            }
        }
        router.get("v1/app/content-cards") { request, _ in
            let since = request.uri.queryParameters.get("since").map { String($0) }
            let cursor = since.flatMap(ContentCardFeed.Cursor.init)
            return try await read(request) {
                guard since == nil || cursor != nil else {
                    return Response.jsonError(.badRequest, "invalid_cursor", "since: the `cursor` of the last answer (<number>-<16 hex>)")
                }
                return nil
            } read: { key, installationID, after, _ in
                try await manager.contentCards(key: key, installationID: installationID, after: after, since: cursor, now: Date())
            } respond: { answer in
                var response = Response.json(answer)
                response.headers[.cacheControl] = "no-store"
                return response
            }
        }
    }

    /// Authenticates the request, checks its own parameters (`check`: a refusal, or nil), reads the profile's partition
    /// (here, or at its owner), and answers.
    func read<Answer: Sendable>(
        _ request: Request, check: () -> Response? = { nil },
        read: (_ key: String, _ installationID: String, _ after: String?, _ app: String) async throws -> AppRead<Answer>,
        respond: (Answer) -> Response
    ) async throws -> Response {
        guard let catalog else {
            return .jsonError(.serviceUnavailable, "in_app_not_configured", "in-app messages and cards need HERALD_APPS_FILE on the orchestrator")
        }
        let query = request.uri.queryParameters
        let caller: AppAuthentication.Caller
        do throws(AppAuthentication.Refusal) {
            caller = try AppAuthentication.caller(request, in: catalog, endpoint: "an app's read")
        } catch {
            return error.response
        }
        let project = caller.project
        let installationID: String
        var customID: String?
        var after: String?
        do throws(Violation) {
            installationID = try Rules.installationID(query.get("installation_id").map { String($0) } ?? "")
            if let value = query.get("custom_id") { customID = try Rules.customID(String(value)) }
            if let value = query.get("after") { after = try Rules.clientID(String(value)) }
        } catch {
            return .jsonError(.badRequest, error.code, "\(error.message) (installation_id, custom_id, after)")
        }
        let app = catalog.app(project: project, id: caller.app)
        if let customID, app?.requireSignedIdentity ?? true {
            do throws(AppAuthentication.Refusal) {
                try AppAuthentication.prove(customID, request, apiKey: caller.apiKey, secrets: app?.identitySecrets ?? [])
            } catch {
                return error.response
            }
        }
        if let refusal = check() { return refusal }
        let profileKey = customID.map { ProfileKey.profile(project, $0) } ?? ProfileKey.home(project, installationID)
        switch try await read(profileKey, installationID, after, caller.app) {
        case .notReady:
            return Self.retry(.serviceUnavailable, "not_ready", "the configuration is not read yet")
        case .notHeld:
            return Self.retry(
                .conflict, "installation_not_in_profile",
                customID == nil
                    ? "the installation is not anonymous here (yet): sync with the user it belongs to, or retry"
                    : "the installation does not belong to \(customID!) here (yet): retry once the identify is applied")
        case .notOwner(let partition):
            // Sent on to the owner, once; the owner answers, or says to retry while a rebalance moves the partition.
            guard !ReadForwarding.isForwarded(request), let owner = owners?.owner(of: partition), owner.instance != instance else {
                return Self.retry(
                    .serviceUnavailable, "not_partition_owner",
                    "no orchestrator instance runs partition \(partition) here now (a rebalance is moving it): retry")
            }
            return await ReadForwarding.forward(request, to: owner, passing: Self.forwardedHeaders, from: instance)
        case .writePending:
            return Self.retry(.conflict, "write_pending", "after: the write is not applied yet")
        case .answer(let answer):
            return respond(answer)
        }
    }

    /// What the owner needs of an app's read to answer it: the app's key, the user's proof, the app's last tag.
    static let forwardedHeaders: [HTTPField.Name] = [.apiKey, .customIDAuth, .ifNoneMatch]

    /// An answer with its `ETag`, never cached by a proxy: 304 without a body when the app's tag was the answer's
    /// (`json` nil). The in-app and the geofence syncs answer so.
    static func tagged(_ json: JSONValue?, etag: String) -> Response {
        var headers = HTTPFields()
        headers[.eTag] = etag
        headers[.cacheControl] = "no-store"
        guard let json else { return Response(status: .notModified, headers: headers) }
        var response = Response.json(json)
        for field in headers { response.headers.append(field) }
        return response
    }

    static func retry(_ status: HTTPResponse.Status, _ code: String, _ message: String) -> Response {
        var response = Response.jsonError(status, code, message)
        response.headers[.retryAfter] = "1"
        return response
    }
}
