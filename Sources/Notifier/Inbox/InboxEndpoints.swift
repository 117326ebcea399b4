import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import ServiceSupport
import Shared

/// The inbox API apps call (`X-Api-Key`: the app's live key). Installation mode needs only the key; custom-ID mode
/// also `X-CustomID-Auth` (`CustomIDProof`), the lowercase hex HMAC-SHA256 of api key ‖ custom ID keyed with the app's inbox secret,
/// computed on the customer's server.
///
///     GET    /v1/inbox/{install|custom}/{id}?from=&limit=&include_silent=
///     POST   /v1/inbox/{install|custom}/{id}/notifications/{notification_id}/read
///     POST   /v1/inbox/{install|custom}/{id}/notifications/{notification_id}/opened
///     DELETE /v1/inbox/{install|custom}/{id}/notifications/{notification_id}
///     POST   /v1/inbox/{install|custom}/{id}/read-all?until={notification_id}
///
/// Every instance answers for the whole inbox: the partitions it does not run are asked of their owners (`InboxReads`).
struct InboxEndpoints: Sendable {
    let reads: InboxReads
    let catalog: AppsCatalog
    let logger: Logger

    static let defaultLimit = 20
    static let maxLimit = 100
    static let maxIdentifierLength = 1024

    func register(on router: Router<ServiceRequestContext>) {
        reads.answer(on: router)
        router.get("v1/inbox/:mode/:owner") { request, context in
            try await handle(request, context) { owner in try await page(owner, request) }
        }
        router.post("v1/inbox/:mode/:owner/notifications/:notification/:mark") { request, context in
            try await handle(request, context) { owner in
                let mark: Inbox.Mark
                switch context.parameters.get("mark") {
                case "read": mark = .read
                case "opened": mark = .opened
                default: return .jsonError(.notFound, "not_found", "expected …/notifications/{id}/read or …/opened")
                }
                return try await self.mark(owner, context.parameters.get("notification") ?? "", mark)
            }
        }
        router.delete("v1/inbox/:mode/:owner/notifications/:notification") { request, context in
            try await handle(request, context) { owner in
                try await self.mark(owner, context.parameters.get("notification") ?? "", .deleted)
            }
        }
        router.post("v1/inbox/:mode/:owner/read-all") { request, context in
            try await handle(request, context) { owner in
                guard let until = request.uri.queryParameters.get("until"), !until.isEmpty else {
                    return .jsonError(.badRequest, "invalid_parameter", "until: the newest notification the app has shown is required")
                }
                guard let marked = try await reads.markAllRead(owner, until: until) else {
                    return .jsonError(.notFound, "notification_not_found", "until: no notification \(until) in this inbox")
                }
                return .json(.object([JSONMember("marked", .number(String(marked)))]))
            }
        }
    }

    /// Authenticates the app and the owner, then runs `body`.
    private func handle(
        _ request: Request, _ context: ServiceRequestContext, _ body: (Inbox.Owner) async throws -> Response
    ) async throws -> Response {
        do {
            return try await authenticated(request, context, body)
        } catch let unavailable as PartitionPeers.Unavailable {
            logger.info("inbox partition not answered", metadata: ["reason": "\(unavailable)"])
            return unavailable.response
        }
    }

    private func authenticated(
        _ request: Request, _ context: ServiceRequestContext, _ body: (Inbox.Owner) async throws -> Response
    ) async throws -> Response {
        switch authenticate(request, context) {
        case .failure(let refusal): return refusal.response
        case .success(var owner):
            if owner.kind == .install {
                let installation = try await reads.installation(project: owner.project, installationID: owner.id)
                if installation.optedOut == true {
                    return .jsonError(.forbidden, "opted_out", "this installation opted out: its inbox is off")
                }
                // An installation that belongs to a user: its inbox is that user's, so it takes that user's proof. An
                // installation id alone (it is in the app's requests, and was once in logs) opens no user's inbox. It
                // shows what was sent while that user held it: never a previous holder's notifications.
                if !installation.users.isEmpty {
                    switch heldBy(request, owner: owner, users: installation.users) {
                    case .failure(let refusal): return refusal.response
                    case .success(let user): owner.heldBy = user
                    }
                }
            }
            return try await body(owner)
        }
    }

    private struct Refusal: Error { var response: Response }

    private func authenticate(_ request: Request, _ context: ServiceRequestContext) -> Result<Inbox.Owner, Refusal> {
        func refuse(_ status: HTTPResponse.Status, _ code: String, _ message: String) -> Result<Inbox.Owner, Refusal> {
            .failure(Refusal(response: .jsonError(status, code, message)))
        }
        let mode = Inbox.Owner.Kind(rawValue: context.parameters.get("mode") ?? "")
        guard let mode else { return refuse(.notFound, "not_found", "expected /v1/inbox/install/{id} or /v1/inbox/custom/{id}") }
        let field = mode == .install ? "installation_id" : "custom_id"
        guard let id = context.parameters.get("owner")?.removingPercentEncoding, !id.isEmpty,
            id.utf16.count <= Self.maxIdentifierLength
        else {
            return refuse(.badRequest, "invalid_parameter", "\(field): 1 to \(Self.maxIdentifierLength) characters")
        }
        let caller: AppAuthentication.Caller
        do throws(AppAuthentication.Refusal) {
            caller = try AppAuthentication.caller(request, in: catalog, endpoint: "the inbox")
        } catch {
            return .failure(Refusal(response: error.response))
        }
        let (project, appID) = (caller.project, caller.app)
        guard !caller.dev else { return refuse(.forbidden, "dev_api_key", "X-Api-Key: the inbox works with the app's live API key only") }
        guard let secret = catalog.app(project: project, id: appID)?.inboxSecret else {
            return refuse(.forbidden, "inbox_not_enabled", "the app has no inbox_secret in the apps file: its inbox is off")
        }
        if mode == .custom {
            do throws(AppAuthentication.Refusal) {
                try AppAuthentication.prove(id, request, apiKey: caller.apiKey, secrets: [secret])
            } catch {
                return .failure(Refusal(response: error.response))
            }
        }
        return .success(Inbox.Owner(project: project, app: appID, kind: mode, id: id))
    }

    /// Which of `users` the request's `X-CustomID-Auth` proves, under the app's inbox secret.
    private func heldBy(_ request: Request, owner: Inbox.Owner, users: [String]) -> Result<String, Refusal> {
        guard let proof = request.headers[.customIDAuth], !proof.isEmpty else {
            return .failure(Refusal(response: .jsonError(
                .unauthorized, "missing_custom_id_auth",
                "this installation belongs to a user: its inbox needs X-CustomID-Auth for that user (as /v1/inbox/custom/{custom_id} does)")))
        }
        let key = request.headers[.apiKey] ?? ""
        let secret = catalog.app(project: owner.project, id: owner.app)?.inboxSecret ?? ""
        guard let user = users.first(where: { CustomIDProof.verify(proof, apiKey: key, customID: $0, secrets: [secret]) }) else {
            return .failure(Refusal(response: .jsonError(
                .unauthorized, "invalid_custom_id_auth", "X-CustomID-Auth does not match the user this installation belongs to")))
        }
        return .success(user)
    }

    private func page(_ owner: Inbox.Owner, _ request: Request) async throws -> Response {
        let query = request.uri.queryParameters
        var limit = Self.defaultLimit
        if let text = query.get("limit") {
            guard let value = Int(text), (1...Self.maxLimit).contains(value) else {
                return .jsonError(.badRequest, "invalid_parameter", "limit: an integer from 1 to \(Self.maxLimit), got \"\(text)\"")
            }
            limit = value
        }
        var cursor: Inbox.Cursor?
        if let text = query.get("from") {
            guard let value = Inbox.Cursor(token: text) else {
                return .jsonError(.badRequest, "invalid_parameter", "from: not a cursor this API returned")
            }
            cursor = value
        }
        var includeSilent = false
        if let text = query.get("include_silent") {
            guard text == "true" || text == "false" else {
                return .jsonError(.badRequest, "invalid_parameter", "include_silent: true or false, got \"\(text)\"")
            }
            includeSilent = text == "true"
        }
        let (notifications, hasMore) = try await reads.page(owner, before: cursor, limit: limit, includeSilent: includeSilent)
        var members = [JSONMember("hasMore", .bool(hasMore))]
        if hasMore, let last = notifications.last { members.append(JSONMember("cursor", .string(last.cursor.token))) }
        members.append(JSONMember("notifications", .array(notifications.map(Self.json))))
        return .json(.object(members))
    }

    /// One notification in the wire shape of Batch's inbox (`notificationId`, `notificationTime` in ms, `sendId`,
    /// `payload`…), with the fields an app shows without parsing the payload.
    static func json(_ notification: Inbox.Notification) -> JSONValue {
        var members = [
            JSONMember("notificationId", .string(notification.notificationID)),
            JSONMember("notificationTime", .number(String(notification.sentAt / 1000))),
            JSONMember("sendId", .string(notification.sendID)),
        ]
        if let id = notification.installationID { members.append(JSONMember("installId", .string(id))) }
        if let id = notification.customID { members.append(JSONMember("customId", .string(id))) }
        members += [
            JSONMember("read", .bool(notification.read || notification.opened)),
            JSONMember("opened", .bool(notification.opened)),
            JSONMember("source", .string(notification.source)),
        ]
        if let title = notification.title { members.append(JSONMember("title", .string(title))) }
        if let body = notification.body { members.append(JSONMember("body", .string(body))) }
        if let url = notification.attachmentURL { members.append(JSONMember("attachmentUrl", .string(url))) }
        members.append(JSONMember("silent", .bool(notification.silent)))
        members.append(JSONMember("payload", (try? JSONParser.parse(Array(notification.payload))) ?? .null))
        return .object(members)
    }

    private func mark(_ owner: Inbox.Owner, _ notificationID: String, _ mark: Inbox.Mark) async throws -> Response {
        guard try await reads.mark(owner, notificationID: notificationID, mark) else {
            return .jsonError(.notFound, "notification_not_found", "notification_id: no notification \(notificationID) in this inbox")
        }
        return Response(status: .noContent)
    }

}
