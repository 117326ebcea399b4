import Foundation
import Hummingbird
import OrchestratorDomain
import ServiceSupport
import Shared

/// Read-only, for operators: a profile as the orchestrator holds it (404 when no partition of this instance has it), by
/// custom ID, an installation's anonymous profile, a Braze alias, and a profile's segments. They return emails, phones
/// and tokens: registered on the operator group (`HERALD_OPERATOR_TOKEN`, or loopback peers only).
struct ProfileReadEndpoints: Sendable {
    let manager: OrchestratorPartitions

    func register(on reads: RouterGroup<ServiceRequestContext>) {
        reads.get("v1/profiles/:project/:custom_id") { _, context in
            try await profileResponse(ProfileKey.profile(context.decodedParameter("project"), context.decodedParameter("custom_id")))
        }
        reads.get("v1/installations/:project/:installation_id") { _, context in
            try await profileResponse(ProfileKey.home(context.decodedParameter("project"), context.decodedParameter("installation_id")))
        }
        // A Braze alias: its alias-only profile, or the custom ID of the profile that holds it.
        reads.get("v1/aliases/:project/:label/:name") { _, context -> Response in
            let project = context.decodedParameter("project")
            let alias = UserAlias(label: context.decodedParameter("label"), name: context.decodedParameter("name"))
            guard let json = try await manager.find({ try ProfileView.alias($0, project: project, alias: alias) }) else {
                return .jsonError(.notFound, "not_found", "no such alias in this instance's partitions")
            }
            return .json(json)
        }
        // The segments a profile is in now.
        reads.get("v1/profiles/:project/:custom_id/segments") { _, context in
            let key = ProfileKey.profile(context.decodedParameter("project"), context.decodedParameter("custom_id"))
            guard let segments = try await manager.segments(key: key) else { return try await profileResponse(key) }
            return .json(.object([JSONMember("profile_key", .string(key)), JSONMember("segments", .array(segments.map(JSONValue.string)))]))
        }
    }

    private func profileResponse(_ key: String) async throws -> Response {
        guard let json = try await manager.profile(key: key) else {
            return .jsonError(.notFound, "not_found", "no such profile in this instance's partitions")
        }
        return .json(json)
    }

}
