import Foundation
import Hummingbird
import Shared

/// Transactional sends to one device (project REST key), as Batch's transactional API does: `POST /v1/sends/push` to an
/// installation, or to a raw token of an app and an environment. One `push_send` record on `herald.ingest`: keyed by
/// the installation's home (the orchestrator forwards it to the profile that holds the installation, and writes the
/// send request there with the contact revision it was decided on), or by the token's key (a send that needs no
/// contact). Transactional: no marketing subscription, quiet hours or frequency caps apply; an opted-out installation
/// or a dead token still gets nothing.
struct SendsController {
    let api: IngestAPI

    func register(on router: Router<IngestContext>) {
        router.post("v1/sends/push") { request, context in try await push(request, context: context) }
    }

    /// The campaign label a send is reported under when the call names none.
    static let defaultCampaign = "transactional"

    /// `POST /v1/sends/push {"installation_id" | "token", "app"?, "environment"?, "notification": {…}, "payload"?,
    /// "campaign"?, "id"?}`: `app` is required with a token (its platform checks the token, its bundle id is the APNs
    /// topic) and limits an installation's send to that app.
    func push(_ request: Request, context: IngestContext) async throws -> Response {
        guard case .rest(let project) = try api.authenticate(request, as: .rest) else { throw APIError.validation([]) }
        let body = try await api.body(request, context: context)
        let fields = Fields(
            body, path: "", known: ["installation_id", "token", "app", "environment", "notification", "payload", "campaign", "id"])
        guard fields.isObject else { throw APIError.badRequest("invalid_body", "the body is a JSON object") }
        var problems = fields.problems
        var app: AppsCatalog.App?
        switch fields["app"] {
        case nil: break
        case .string(let name)?:
            // An app the apps file does not have is a reference to nothing: 404, as for a path.
            guard let known = api.catalog.app(project: project, id: name) else {
                throw APIError(status: .notFound, code: "unknown_app", message: "project \(project) has no app \(name)")
            }
            app = known
        case let other?:
            problems.append(Violation("invalid_type", "app is a string, got \(other.typeName)").at("app"))
        }
        var installationID: String?
        var token: String?
        var environment: PushEnvironment?
        do throws(Violation) {
            installationID = try fields.string("installation_id", Rules.installationID)
        } catch {
            problems.append(error.at("installation_id"))
        }
        do throws(Violation) {
            if case .string(let text)? = fields["token"] {
                guard let app else { throw Violation("missing_field", "a token needs its app") }
                token = try Rules.pushToken(text, platform: app.platform)
            } else if fields["token"] != nil {
                throw Violation("invalid_type", "token is a string")
            }
        } catch {
            problems.append(error.at("token"))
        }
        do throws(Violation) {
            environment = try fields.string("environment", Rules.pushEnvironment)
        } catch {
            problems.append(error.at("environment"))
        }
        if (fields["installation_id"] == nil) == (fields["token"] == nil) {
            problems.append(Violation("invalid_target", "name the device by installation_id or by token (with its app), one of them").at(""))
        }
        if installationID != nil, environment != nil {
            problems.append(Violation("invalid_field", "environment goes with a token (an installation's is known)").at("environment"))
        }
        var campaign = Self.defaultCampaign
        do throws(Violation) {
            if let label = try fields.string("campaign", { text throws(Violation) in
                guard Rules.isVisibleASCII(text, length: 1...128) else {
                    throw Violation("invalid_value", "campaign is a label of 1 to 128 visible ASCII characters")
                }
                return text
            }) { campaign = label }
        } catch {
            problems.append(error.at("campaign"))
        }
        var clientID: String?
        do throws(Violation) {
            clientID = try fields.string("id", Rules.clientID)
        } catch {
            problems.append(error.at("id"))
        }
        guard let notification = fields["notification"] else {
            throw APIError.validation(problems + [Violation("missing_field", "notification is required").at("notification")])
        }
        let content = PushContent.notification(notification, path: "notification", problems: &problems)
        // "+N" adds to the count the notifier keeps per installation: a raw token has none (it was dropped unsent).
        if fields["token"] != nil, content["badge"]?.hasPrefix("+") == true {
            problems.append(
                Violation("invalid_value", "\"+N\" adds to an installation's count: a raw token has none; send a number")
                    .at("notification.badge"))
        }
        let payload = fields["payload"].map { PushContent.payload($0, path: "payload", problems: &problems) }
        // Texts the schema allows one by one can still be too many together: refused here rather than failed later.
        let least = PushPayloadRules.leastBytes(
            fields: content, payload: (payload ?? [:]).map { JSONMember($0.key, $0.value) })
        if problems.isEmpty, least > PushPayloadRules.maxBytes {
            problems.append(
                Violation(
                    "payload_too_large",
                    "the notification's texts and payload take \(least) bytes, and APNs and FCM take \(PushPayloadRules.maxBytes) in all"
                ).at("notification"))
        }
        // One device, one notification: any problem refuses the send (there is nothing to keep in part).
        guard problems.isEmpty else { throw APIError.validation(problems) }
        let push = TransactionalPush(
            campaign: campaign, notification: content.keys.sorted().map { JSONMember($0, .string(content[$0]!)) },
            payload: payload.map { payload in payload.keys.sorted().map { JSONMember($0, payload[$0]!) } }, app: app?.id,
            environment: environment, sendIDVersion: TransactionalPush.currentSendIDVersion)
        var record = IngestRecord(
            .pushSend(push), id: api.recordID(client: clientID, op: .pushSend, request: request, context: context, index: 0),
            project: project, source: .server, customID: nil, installationID: installationID, receivedAt: api.now())
        record.deviceToken = token
        return try await api.store([record], problems: [], context: context)
    }
}
