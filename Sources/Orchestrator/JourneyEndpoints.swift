import Foundation
import Hummingbird
import OrchestratorDomain
import ServiceSupport
import Shared

/// Who is where in a journey over every partition (docs/journeys.md, "Who is where"), what `herald journey show`
/// reads: the partitions this instance runs answered here, the others asked of their owners (`PartitionPeers`). For
/// operators.
///
///     GET /v1/journeys/{project}/{journey}                               the instances waiting, per version and node
///     GET /v1/journeys/{project}/{journey}/nodes/{node}?after=&limit=    those at a node, by profile key, a page at a time
struct JourneyEndpoints: Sendable {
    let manager: OrchestratorPartitions
    let peers: PartitionPeers
    let partitionCount: Int32

    struct CountsQuestion: Codable, Sendable {
        static let path = "/v1/peers/journey-counts"
        var journey: String
    }

    struct PageQuestion: Codable, Sendable {
        static let path = "/v1/peers/journey-page"
        var journey: String
        var node: String
        var after: String
        var limit: Int
    }

    func answer(on router: Router<ServiceRequestContext>) {
        let manager = manager
        peers.answer(CountsQuestion.self, at: CountsQuestion.path, on: router) { question, partitions in
            try await manager.journeyCounts(journey: question.journey, in: partitions)
        }
        peers.answer(PageQuestion.self, at: PageQuestion.path, on: router) { question, partitions in
            try await manager.journeyPage(
                journey: question.journey, node: question.node, after: question.after, limit: min(question.limit, JourneyPositions.maxPage),
                in: partitions)
        }
    }

    func register(on reads: RouterGroup<ServiceRequestContext>) {
        let (manager, peers, all) = (manager, peers, Array(0..<partitionCount))
        reads.get("v1/journeys/:project/:journey") { _, context -> Response in
            let journey: JourneyDefinition
            switch await Self.journey(context, manager) {
            case .success(let found): journey = found
            case .failure(let response): return response.response
            }
            let question = CountsQuestion(journey: journey.key)
            do {
                let parts = try await peers.ask(question, about: all, at: CountsQuestion.path) { local in
                    try await manager.journeyCounts(journey: question.journey, in: local)
                }
                let counts = JourneyPositions.sum(parts)
                return .json(
                    .object([
                        JSONMember("journey", .string(journey.key)), JSONMember("version", .string(journey.version)),
                        JSONMember("waiting", .number(String(counts.reduce(0) { $0 + $1.count }))),
                        JSONMember(
                            "nodes",
                            .array(counts.map { count in
                                .object([
                                    JSONMember("version", .string(count.version)), JSONMember("node", .string(count.node)),
                                    JSONMember("count", .number(String(count.count))),
                                ])
                            })),
                    ]))
            } catch let unavailable as PartitionPeers.Unavailable {
                return unavailable.response
            }
        }
        reads.get("v1/journeys/:project/:journey/nodes/:node") { request, context -> Response in
            let journey: JourneyDefinition
            switch await Self.journey(context, manager) {
            case .success(let found): journey = found
            case .failure(let response): return response.response
            }
            let node = context.decodedParameter("node")
            let after = request.uri.queryParameters.get("after") ?? ""
            let limitText = request.uri.queryParameters.get("limit") ?? "100"
            guard let limit = Int(limitText), (1...JourneyPositions.maxPage).contains(limit) else {
                return .jsonError(.badRequest, "invalid_request", "limit: a whole number from 1 to \(JourneyPositions.maxPage), found \(limitText)")
            }
            let question = PageQuestion(journey: journey.key, node: node, after: after, limit: limit)
            do {
                let parts = try await peers.ask(question, about: all, at: PageQuestion.path) { local in
                    try await manager.journeyPage(journey: question.journey, node: node, after: after, limit: limit, in: local)
                }
                let page = JourneyPositions.merge(parts, limit: limit)
                var members = [
                    JSONMember("journey", .string(journey.key)), JSONMember("node", .string(node)),
                    JSONMember(
                        "instances",
                        .array(page.map { position in
                            .object([
                                JSONMember("profile_key", .string(position.profileKey)), JSONMember("version", .string(position.version)),
                                JSONMember("since", .time(position.since)), JSONMember("entered_at", .time(position.enteredAt)),
                            ])
                        })),
                ]
                // The next page starts after the last key; none when this one was not full.
                if page.count == limit, let last = page.last { members.append(JSONMember("next", .string(last.profileKey))) }
                return .json(.object(members))
            } catch let unavailable as PartitionPeers.Unavailable {
                return unavailable.response
            }
        }
    }

    struct Refusal: Error { let response: Response }

    /// The journey the path names, or the answer saying why not.
    static func journey(_ context: ServiceRequestContext, _ manager: OrchestratorPartitions) async -> Result<JourneyDefinition, Refusal> {
        let project = context.decodedParameter("project"), id = context.decodedParameter("journey")
        guard let rules = await manager.rules else { return .failure(Refusal(response: ReadForwarding.unavailable("the configuration is not read yet"))) }
        guard let journey = rules.config.journeys["\(project)/\(id)"] else {
            return .failure(Refusal(response: .jsonError(.notFound, "not_found", "no journey \(id) in project \(project)")))
        }
        return .success(journey)
    }
}
