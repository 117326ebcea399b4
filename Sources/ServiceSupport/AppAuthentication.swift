import HTTPTypes
import Hummingbird
import Shared

/// How an app's request says who sends it, the same in the three services (ingest's app writes, the orchestrator's
/// app reads, the notifier's inbox): `X-Api-Key` names one of the apps file's apps, and a request that speaks for a
/// custom ID carries `X-CustomID-Auth`, the proof the customer's server made for it (`CustomIDProof`) under one of the
/// secrets the caller names: the app's identity secrets, or the inbox's own secret (docs/security.md).
package enum AppAuthentication {
    /// A refusal in the API's error shape.
    package struct Refusal: Error, Sendable {
        package var status: HTTPResponse.Status
        package var code: String
        package var message: String

        package var response: Response { .jsonError(status, code, message) }
    }

    /// The app whose key the request carries.
    package struct Caller: Sendable, Equatable {
        package var project: String
        package var app: String
        /// The app's development key (`DEV…`).
        package var dev: Bool
        /// The key as presented (what the custom ID's proof signs with).
        package var apiKey: String
    }

    /// The app `X-Api-Key` names; `endpoint` says what refuses another kind of key ("the inbox").
    package static func caller(_ request: Request, in catalog: AppsCatalog, endpoint: String) throws(Refusal) -> Caller {
        guard let key = request.headers[.apiKey], !key.isEmpty else {
            throw Refusal(status: .unauthorized, code: "missing_credentials", message: "X-Api-Key: the app's API key is required")
        }
        switch catalog.credential(for: key) {
        case .app(let project, let app, let dev)?:
            return Caller(project: project, app: app, dev: dev, apiKey: key)
        case nil:
            throw Refusal(status: .unauthorized, code: "invalid_credentials", message: "X-Api-Key: unknown API key")
        case .rest?, .source?:
            throw Refusal(status: .forbidden, code: "wrong_key_kind", message: "X-Api-Key: \(endpoint) takes an app key, not a REST or write key")
        }
    }

    /// Checks that the request proves `customID` under one of `secrets` (with the key it was made for).
    package static func prove(_ customID: String, _ request: Request, apiKey: String, secrets: [String]) throws(Refusal) {
        guard let proof = request.headers[.customIDAuth], !proof.isEmpty else {
            throw Refusal(
                status: .unauthorized, code: "missing_custom_id_auth",
                message: "X-CustomID-Auth is required with a custom ID: the proof the customer's server made for it")
        }
        guard CustomIDProof.verify(proof, apiKey: apiKey, customID: customID, secrets: secrets) else {
            throw Refusal(status: .unauthorized, code: "invalid_custom_id_auth", message: "X-CustomID-Auth does not match this custom ID and API key")
        }
    }
}
