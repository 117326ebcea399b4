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
    static func response(_ answer: InAppEligibility.Answer) -> Response { AppReads.tagged(answer.json, etag: answer.etag) }
}
