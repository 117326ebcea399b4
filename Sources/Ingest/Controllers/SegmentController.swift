import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import Shared

/// Segment's Tracking API (docs/ingest.md, "Segment"), as Segment's and RudderStack's libraries send it: the write
/// key of a source in the apps file as the basic-auth user name, bodies gzip-compressed or not, `POST /v1/batch` and
/// the single calls `/v1/identify`, `/v1/track`, `/v1/page`, `/v1/screen`, `/v1/group`, `/v1/alias`.
///
/// `messageId` is the write's id, so a library's retry is applied once. `userId` names the profile; `anonymousId` is
/// installation-like: its writes gather on an anonymous profile of the source, which merges into the user's profile
/// when a message names both (braze-rules §1.2).
struct SegmentController {
    let api: IngestAPI

    static let types = ["identify", "track", "page", "screen", "group", "alias"]
    /// The most messages of one batch (Segment's limit is on size: 500 KB; Herald's body limit applies too).
    static let maxBatch = 2_500
    /// Segment's own fields of a message; others are reported as ignored.
    static let messageFields: Set<String> = [
        "type", "userId", "anonymousId", "messageId", "timestamp", "originalTimestamp", "sentAt", "receivedAt", "context",
        "integrations", "event", "properties", "traits", "name", "category", "groupId", "previousId", "version", "channel",
        "_metadata", "writeKey", "options", "requestId", "rudderId",
    ]

    func register(on router: Router<IngestContext>) {
        router.post("v1/batch") { request, context in try await segment { try await batch(request, context: context) } }
        for type in Self.types {
            router.post("v1/\(type)") { request, context in
                try await segment { try await single(type, request, context: context) }
            }
        }
    }

    func segment(_ handler: () async throws -> Response) async throws -> Response {
        do {
            return try await handler()
        } catch let error as APIError {
            throw error.in(.segment)
        }
    }

    /// The source of `Authorization: Basic base64(<write key>:)`.
    func source(_ request: Request) throws -> (project: AppsCatalog.Project, source: AppsCatalog.Source) {
        guard let key = request.headers.basicUser else {
            throw APIError.unauthorized("missing_credentials", "this endpoint needs the source's write key as the basic-auth user name")
        }
        guard case .source(let projectID, let sourceID)? = api.catalog.credential(for: key), let project = api.catalog.project(projectID),
            let source = project.sources.first(where: { $0.id == sourceID })
        else {
            throw APIError.unauthorized("invalid_credentials", "unknown write key")
        }
        return (project, source)
    }

    /// `POST /v1/batch {"batch": [message…], "sentAt"?, "context"?}`.
    func batch(_ request: Request, context: IngestContext) async throws -> Response {
        let (project, source) = try source(request)
        let body = try await api.body(request, context: context, acceptsGzip: true)
        guard case .array(let messages)? = body["batch"] else {
            throw APIError.badRequest("invalid_body", "the body is {\"batch\": [messages]}")
        }
        guard messages.count <= Self.maxBatch else {
            throw APIError.badRequest("too_many_messages", "a batch holds at most \(Self.maxBatch) messages (got \(messages.count))")
        }
        var mapper = SegmentMessages(api: api, project: project, source: source, request: request, context: context)
        for (index, message) in messages.enumerated() {
            mapper.map(message, type: nil, path: "batch[\(index)]", batchContext: body["context"])
        }
        return try await answer(mapper, context: context)
    }

    /// `POST /v1/<type>`: one message.
    func single(_ type: String, _ request: Request, context: IngestContext) async throws -> Response {
        let (project, source) = try source(request)
        let body = try await api.body(request, context: context, acceptsGzip: true)
        var mapper = SegmentMessages(api: api, project: project, source: source, request: request, context: context)
        mapper.map(body, type: type, path: "", batchContext: nil)
        return try await answer(mapper, context: context)
    }

    /// `{"success": true, "accepted": n, "rejected": […], "adjusted": […]}` (the libraries read only the status).
    func answer(_ mapper: SegmentMessages, context: IngestContext) async throws -> Response {
        IngestMetrics.adjusted(mapper.values.adjusted)
        try await api.persist(mapper.records, problems: mapper.values.problems, context: context)
        return IngestAPI.json(
            .object([
                JSONMember("success", .bool(true)), JSONMember("accepted", .number(String(mapper.records.count))),
                JSONMember("rejected", mapper.values.problems.reported.list),
                JSONMember("adjusted", mapper.values.adjusted.reported.list),
            ]))
    }
}
