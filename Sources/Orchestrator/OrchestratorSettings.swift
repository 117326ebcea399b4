import Foundation
import Shared

/// The orchestrator's settings: the stateful service's, and the apps file when the in-app endpoints are to answer
/// (`HERALD_APPS_FILE`: the apps' keys and identity secrets; without it they answer 503).
struct OrchestratorSettings: Sendable {
    var service: StatefulServiceConfig
    var catalog: AppsCatalog?

    static func fromEnvironment(_ values: [String: String]) throws(ConfigError) -> OrchestratorSettings {
        var env = EnvironmentReader(values)
        var service = try StatefulServiceConfig.read(&env, service: "orchestrator", defaultPort: 8081)
        var catalog: AppsCatalog?
        if values["HERALD_APPS_FILE"].map({ !$0.trimmingCharacters(in: .whitespaces).isEmpty }) == true {
            catalog = try AppsCatalog.read(&env, hint: "JSON file of projects and apps, see config/apps.sample.json")
        } else {
            _ = try env.bool("HERALD_ALLOW_SAMPLE_KEYS", default: false)
        }
        service.common.unknownVariables = env.unknownHeraldVariables
        return OrchestratorSettings(service: service, catalog: catalog)
    }
}
