import Foundation
import Hummingbird
import OrchestratorDomain
import ServiceSupport
import Shared

/// A campaign's experiment figures over every partition (docs/measurement.md, "The report"), what `herald campaign
/// report` reads: the partitions this instance runs answered here, the others asked of their owners
/// (`PartitionPeers`), summed. For operators (the operator group: `HERALD_OPERATOR_TOKEN`, or loopback peers).
///
///     GET /v1/campaigns/{project}/{campaign}/experiment
struct ExperimentEndpoints: Sendable {
    let manager: OrchestratorPartitions
    let peers: PartitionPeers
    /// How many partitions the topics have (`HERALD_TOPIC_PARTITIONS`).
    let partitionCount: Int32

    /// What one instance asks another, at `path`: the campaign's figures in the partitions named.
    struct Question: Codable, Sendable {
        static let path = "/v1/peers/experiment"
        var campaign: String
        var conversions: Int
    }

    /// Where peers ask (the public router: the key guards it).
    func answer(on router: Router<ServiceRequestContext>) {
        let manager = manager
        peers.answer(Question.self, at: Question.path, on: router) { question, partitions in
            try await manager.experimentFigures(campaign: question.campaign, conversions: question.conversions, in: partitions)
        }
    }

    func register(on reads: RouterGroup<ServiceRequestContext>) {
        reads.get("v1/campaigns/:project/:campaign/experiment") { _, context -> Response in
            let project = context.parameters.get("project")?.removingPercentEncoding ?? ""
            let id = context.parameters.get("campaign")?.removingPercentEncoding ?? ""
            guard let rules = await manager.rules else {
                return ReadForwarding.unavailable("the configuration is not read yet")
            }
            guard let campaign = rules.config.campaigns["\(project)/\(id)"] else {
                return .jsonError(.notFound, "not_found", "no campaign \(id) in project \(project)")
            }
            let question = Question(campaign: campaign.key, conversions: campaign.conversions.count)
            let manager = manager
            let figures: [ExperimentFigures]
            do {
                figures = try await peers.ask(question, about: Array(0..<partitionCount), at: Question.path) { local in
                    try await manager.experimentFigures(campaign: question.campaign, conversions: question.conversions, in: local)
                }
            } catch let unavailable as PartitionPeers.Unavailable {
                return unavailable.response
            }
            let total = figures.reduce(ExperimentFigures(arms: [])) { $0.adding($1) }
            return .json(bytes: try ExperimentAnswer(campaign, figures: total).encoded())
        }
    }
}
