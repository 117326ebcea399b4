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
            return .json(Self.json(campaign, total))
        }
    }

    /// `{"campaign", "version" (the running one, or null), "split": {"control_basis_points", "variants": {id: weight}},
    /// "conversions": [{"event", "window_seconds", "sources"}], "arms": [{"version", "variant", "assigned", "converted": [..],
    /// "events": [..], "revenue_usd", "sends": {outcome: count}}]}`.
    static func json(_ campaign: CampaignDefinition, _ figures: ExperimentFigures) -> JSONValue {
        var members = [JSONMember("campaign", .string(campaign.key))]
        if let experiment = campaign.experiment {
            members.append(JSONMember("version", .string(ExperimentAssignment.version(experiment))))
            members.append(JSONMember("split", .object([
                JSONMember("control_basis_points", .number(String(experiment.controlBasisPoints))),
                JSONMember("variants", .object(experiment.variants.map { JSONMember($0.id, .number(String($0.weight))) })),
            ])))
        } else {
            members.append(JSONMember("version", campaign.conversions.isEmpty ? .null : .string("none")))
        }
        members.append(JSONMember("conversions", .array(campaign.conversions.map { conversion in
            .object([
                JSONMember("event", .string(conversion.event)), JSONMember("window_seconds", .number(JSONValue.literal(conversion.window))),
                JSONMember("sources", .string(conversion.sources.rawValue)),
            ])
        })))
        members.append(JSONMember("arms", .array(figures.arms.map { arm in
            .object([
                JSONMember("version", .string(arm.version)), JSONMember("variant", .string(arm.variant)),
                JSONMember("assigned", .number(String(arm.assigned))),
                JSONMember("converted", .array(arm.converted.map { .number(String($0)) })),
                JSONMember("events", .array(arm.events.map { .number(String($0)) })),
                JSONMember("revenue_usd", .number(JSONValue.literal(arm.revenueUSD))),
                JSONMember("sends", .object(arm.sends.sorted { $0.key < $1.key }.map { JSONMember($0.key, .number(String($0.value))) })),
            ])
        })))
        return .object(members)
    }
}
