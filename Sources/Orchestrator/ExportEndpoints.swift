import Foundation
import Hummingbird
import OrchestratorDomain
import ServiceSupport
import Shared

/// One endpoint for everything Herald holds of a person, both services, every partition (docs/data-rights.md,
/// "Export"), for operators (the operator group: `HERALD_OPERATOR_TOKEN`, or loopback peers):
///
///     GET /v1/export/{project}?custom_id=…      (or email, phone, installation_id, alias_label with alias_name)
///     GET /v1/profiles/{project}/{custom_id}/export
///
/// The instance a request reaches finds the profiles the identifier reaches in every orchestrator partition (those it
/// runs here, the others asked of their owners, `PartitionPeers`), then asks the notifiers about those profiles (and
/// the address or number) through Kafka (`ExportAnswers`), and answers every line as NDJSON: 404 when nothing is held,
/// 503 with `Retry-After` when a partition of either service did not answer.
struct ExportEndpoints: Sendable {
    let manager: OrchestratorPartitions
    let peers: PartitionPeers
    let notifiers: ExportAnswers
    /// Whether the notifiers' answers are followed yet (`TopicTailFollower.isFollowing`).
    let following: @Sendable () -> Bool
    let partitionCount: Int32

    /// What one instance asks another, at `path`: the rows of the profiles the identifier reaches in the partitions named.
    struct Question: Codable, Sendable {
        static let path = "/v1/peers/export"
        var project: String
        var customID: String?
        var email: String?
        var phone: String?
        var installationID: String?
        var aliasLabel: String?
        var aliasName: String?
        var tokens: Bool

        var identifier: ProfileLookup.Identifier? {
            if let customID { return .customID(customID) }
            if let email { return .email(email) }
            if let phone { return .phone(phone) }
            if let installationID { return .installation(installationID) }
            if let aliasLabel, let aliasName { return .alias(UserAlias(label: aliasLabel, name: aliasName)) }
            return nil
        }
    }

    /// A peer's answer: the profiles found and their lines.
    struct Answer: Codable, Sendable {
        var profileKeys: [String]
        var lines: [String]
    }

    func answer(on router: Router<ServiceRequestContext>) {
        let manager = manager
        peers.answer(Question.self, at: Question.path, on: router) { question, partitions in
            try await Self.rows(manager, question, in: partitions)
        }
    }

    func register(on reads: RouterGroup<ServiceRequestContext>) {
        reads.get("v1/profiles/:project/:custom_id/export") { request, context in
            let project = context.decodedParameter("project")
            let question = Question(
                project: project, customID: context.decodedParameter("custom_id"), tokens: request.uri.queryParameters.get("tokens") == "true")
            return try await export(question)
        }
        reads.get("v1/export/:project") { request, context -> Response in
            let query = request.uri.queryParameters
            func value(_ name: String) -> String? { query.get(name).map { String($0) } }
            let question = Question(
                project: context.decodedParameter("project"), customID: value("custom_id"), email: value("email"), phone: value("phone"),
                installationID: value("installation_id"), aliasLabel: value("alias_label"), aliasName: value("alias_name"),
                tokens: value("tokens") == "true")
            return try await export(question)
        }
    }

    private func export(_ question: Question) async throws -> Response {
        guard let identifier = question.identifier else {
            return .jsonError(.badRequest, "missing_identifier", "name custom_id, email, phone, installation_id, or alias_label and alias_name")
        }
        guard following() else { return ReadForwarding.unavailable("the notifiers' answers are not followed yet") }
        let manager = manager
        do {
            let found = try await peers.ask(question, about: Array(0..<partitionCount), at: Question.path) { local in
                try await Self.rows(manager, question, in: local)
            }
            let keys = Set(found.flatMap(\.profileKeys)).sorted()
            let (email, phone): (String?, String?) = switch identifier {
            case .email(let email): (email, nil)
            case .phone(let phone): (nil, phone)
            default: (nil, nil)
            }
            var lines = found.flatMap(\.lines)
            if !keys.isEmpty || email != nil || phone != nil {
                lines += try await notifiers.ask(project: question.project, profileKeys: keys, email: email, phone: phone, tokens: question.tokens)
            }
            return ProfileExportResponse.response(asked: "\(identifier) in \(question.project)", lines: lines)
        } catch let unavailable as PartitionPeers.Unavailable {
            return unavailable.response
        }
    }

    /// The orchestrator's rows in `partitions`, each running here; nil when one is not.
    static func rows(_ manager: OrchestratorPartitions, _ question: Question, in partitions: [Int32]) async throws -> Answer? {
        guard let identifier = question.identifier,
            let rows = try await manager.export(project: question.project, identifier, tokens: question.tokens, in: partitions)
        else { return nil }
        return Answer(
            profileKeys: Set(rows.map(\.profileKey)).sorted(), lines: rows.map { ProfileExportResponse.line(service: "orchestrator", $0) })
    }

}
