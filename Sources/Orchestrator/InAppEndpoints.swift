import Foundation
import HTTPTypes
import Hummingbird
import OrchestratorDomain
import PartitionStore
import ServiceSupport
import Shared

/// The in-app messages an app syncs (docs/in-app.md):
///
///     GET /v1/app/in-app-messages?installation_id=…[&custom_id=…][&after=<record id>]
///
/// `X-Api-Key`: the app's key; with `custom_id`, the user's proof `X-CustomID-Auth` (signed identity, as for the
/// app's writes). The answer is computed for exactly the profile the request names, and only while that profile holds
/// the installation: after an identify or a logout, the answer for the previous profile is 409, never its messages.
/// `after` names the app's latest write (an id the ingest returned): the answer reflects it, or is 409 until it is
/// applied. `If-None-Match` with the last answer's `ETag` gives 304 while nothing changed.
struct InAppEndpoints: Sendable {
    let manager: OrchestratorPartitions
    let catalog: AppsCatalog?
    /// Who owns the other partitions: a sync of a profile this instance does not hold goes there.
    let owners: PartitionDirectory?
    let instance: String

    func register(on router: Router<ServiceRequestContext>) {
        router.get("v1/app/in-app-messages") { request, _ in try await messages(request) }
    }

    func messages(_ request: Request) async throws -> Response {
        guard let catalog else {
            return .jsonError(.serviceUnavailable, "in_app_not_configured", "in-app messages need HERALD_APPS_FILE on the orchestrator")
        }
        let query = request.uri.queryParameters
        guard let key = request.headers[HTTPField.Name("X-Api-Key")!], !key.isEmpty else {
            return .jsonError(.unauthorized, "missing_credentials", "X-Api-Key: the app's API key is required")
        }
        guard case .app(let project, let appID, _)? = catalog.credential(for: key) else {
            if catalog.credential(for: key) != nil {
                return .jsonError(.forbidden, "wrong_key_kind", "X-Api-Key: in-app messages take an app key, not a REST key")
            }
            return .jsonError(.unauthorized, "invalid_credentials", "X-Api-Key: unknown API key")
        }
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
        let app = catalog.app(project: project, id: appID)
        if let customID, app?.requireSignedIdentity ?? true {
            guard let proof = request.headers[HTTPField.Name("X-CustomID-Auth")!], !proof.isEmpty else {
                return .jsonError(.unauthorized, "missing_custom_id_auth", "X-CustomID-Auth is required with custom_id")
            }
            guard CustomIDProof.verify(proof, apiKey: key, customID: customID, secrets: app?.identitySecrets ?? []) else {
                return .jsonError(.unauthorized, "invalid_custom_id_auth", "X-CustomID-Auth does not match this custom_id and API key")
            }
        }
        let profileKey = customID.map { ProfileKey.profile(project, $0) } ?? ProfileKey.home(project, installationID)
        switch try await manager.inAppMessages(key: profileKey, installationID: installationID, after: after, now: Date()) {
        case .notReady:
            return retry(.serviceUnavailable, "not_ready", "the configuration is not read yet")
        case .notHeld:
            return retry(
                .conflict, "installation_not_in_profile",
                customID == nil
                    ? "the installation is not anonymous here (yet): sync with the user it belongs to, or retry"
                    : "the installation does not belong to \(customID!) here (yet): retry once the identify is applied")
        case .notOwner(let partition):
            // Sent on to the owner, once; the owner answers, or says to retry while a rebalance moves the partition.
            guard !ReadForwarding.isForwarded(request), let owner = owners?.owner(of: partition), owner.instance != instance else {
                return retry(
                    .serviceUnavailable, "not_partition_owner",
                    "no orchestrator instance runs partition \(partition) here now (a rebalance is moving it): retry")
            }
            return await ReadForwarding.forward(request, to: owner.url, from: instance)
        case .writePending:
            return retry(.conflict, "write_pending", "after: the write is not applied yet")
        case .answer(let answer):
            var headers = HTTPFields()
            headers[.eTag] = answer.etag
            headers[.cacheControl] = "no-store"
            if request.headers[.ifNoneMatch] == answer.etag { return Response(status: .notModified, headers: headers) }
            var response = Response.json(answer.json)
            for field in headers { response.headers.append(field) }
            return response
        }
    }

    private func retry(_ status: HTTPResponse.Status, _ code: String, _ message: String) -> Response {
        var response = Response.jsonError(status, code, message)
        response.headers[.retryAfter] = "1"
        return response
    }
}
