import Foundation
import HTTPTypes
import Hummingbird
import OrchestratorDomain
import ServiceSupport
import Shared

/// The in-app messages an app syncs (docs/in-app.md), with what every app read takes (`AppReads`):
///
///     GET /v1/app/in-app-messages?installation_id=…[&custom_id=…][&after=<record id>]
///
/// `If-None-Match` with the last answer's `ETag` gives 304 while nothing the answer is computed from changed: the tag is
/// known before any message is rendered (`InAppAnswerTag`).
enum InAppEndpoint {
    static func response(_ answer: InAppEligibility.Answer) -> Response { tagged(answer.json, etag: answer.etag) }

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
}
